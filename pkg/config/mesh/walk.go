package mesh

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// The decoder turns a mesh config into a proto in one protojson call.
// protojson's own errors carry a JSON offset, not a field, and the JSON is
// a conversion of the user's YAML, so its offsets mean nothing to the
// user. When that call fails, walk decodes field by field to find the
// innermost field that cannot be decoded and names it. The same walk
// (run always; mesh configs are small) records which fields the document
// sets and which it names that MeshConfig does not have.

// scan is what a walk learns about a document.
type scan struct {
	set     []string // paths of fields present with a non-null value
	unknown []string // paths of names MeshConfig has no field for
	errs    []*config.FieldError
}

// object decodes a JSON object into its members. Null means absent.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if isNull(raw) {
		return nil, true
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false
	}
	return obj, true
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" }

// field finds the field a JSON member names: its JSON name
// ("accessLogFile") or its proto name ("access_log_file"), as both
// protojson and istiod's jsonpb accept.
func field(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(name); fd != nil {
		return fd
	}
	return md.Fields().ByTextName(name)
}

// present returns the fields of md that obj sets to something other
// than null, in field-number order. istiod's decoder skips null members,
// so "accessLogFile:" with no value keeps the default.
func present(md protoreflect.MessageDescriptor, obj map[string]json.RawMessage) []protoreflect.FieldDescriptor {
	var out []protoreflect.FieldDescriptor
	for k, v := range obj {
		if fd := field(md, k); fd != nil && !isNull(v) {
			out = append(out, fd)
		}
	}
	slices.SortFunc(out, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number()) - int(b.Number()) })
	return slices.CompactFunc(out, func(a, b protoreflect.FieldDescriptor) bool { return a == b })
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// walk visits the object raw of message type md at path. With locate
// set, it also decodes each member alone and records, as an error, the
// innermost member that does not decode.
func (s *scan) walk(md protoreflect.MessageDescriptor, path string, raw json.RawMessage, locate bool) {
	obj, ok := object(raw)
	if !ok {
		if locate {
			s.errs = append(s.errs, config.FieldErrorf(orRoot(path), "must be a mapping of fields, not %s", kindOf(raw)))
		}
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	oneofs := map[protoreflect.OneofDescriptor]string{}
	for _, k := range keys {
		v := obj[k]
		fd := field(md, k)
		if fd == nil {
			s.unknown = append(s.unknown, join(path, k))
			continue
		}
		p := join(path, fd.JSONName())
		if isNull(v) {
			continue
		}
		s.set = append(s.set, p)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if other, dup := oneofs[od]; dup {
				s.errs = append(s.errs, config.FieldErrorf(p, "only one of %s and %s may be set", other, fd.JSONName()))
				continue
			}
			oneofs[od] = fd.JSONName()
		}
		if fd.Kind() == protoreflect.EnumKind {
			s.enum(fd, p, v)
		}
		bad := false
		if locate {
			bad = decodeMember(md, k, v) != nil
		}
		before := len(s.errs)
		s.children(fd, p, v, bad)
		if bad && len(s.errs) == before {
			s.errs = append(s.errs, config.FieldErrorf(p, "%s", cleanError(decodeMember(md, k, v))))
		}
	}
}

// enum checks the names an enum member uses. protojson, told to drop
// unknown fields as istiod's decoder finally does, drops unknown enum
// names too; istiod's decoder refuses them ("accessLogEncoding: XML").
// Numbers are accepted, as by both.
func (s *scan) enum(fd protoreflect.FieldDescriptor, path string, v json.RawMessage) {
	ed := fd.Enum()
	if fd.IsMap() {
		ed = fd.MapValue().Enum()
	}
	check := func(p string, raw json.RawMessage) {
		var name string
		if json.Unmarshal(raw, &name) != nil {
			return // a number, or a wrong type protojson reports
		}
		if ed.Values().ByName(protoreflect.Name(name)) == nil {
			s.errs = append(s.errs, config.FieldErrorf(p, "unknown value %q (one of %s)", name, enumNames(ed)))
		}
	}
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if json.Unmarshal(v, &items) == nil {
			for i, item := range items {
				check(path+"["+strconv.Itoa(i)+"]", item)
			}
		}
	case fd.IsMap():
		obj, _ := object(v)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			check(path+"["+strconv.Quote(k)+"]", obj[k])
		}
	default:
		check(path, v)
	}
}

func enumNames(ed protoreflect.EnumDescriptor) string {
	names := make([]string, ed.Values().Len())
	for i := range names {
		names[i] = string(ed.Values().Get(i).Name())
	}
	return strings.Join(names, ", ")
}

// children walks into a member's value: a message, each message of a
// list, each message value of a map. Well-known types (durations,
// wrappers, Struct) have JSON forms of their own and are leaves.
func (s *scan) children(fd protoreflect.FieldDescriptor, path string, v json.RawMessage, locate bool) {
	var md protoreflect.MessageDescriptor
	switch {
	case fd.IsMap():
		md = fd.MapValue().Message()
	default:
		md = fd.Message()
	}
	if md == nil || strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return
	}
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return // not a list: the member itself is reported
		}
		for i, item := range items {
			if !isNull(item) {
				s.walk(md, path+"["+strconv.Itoa(i)+"]", item, locate)
			}
		}
	case fd.IsMap():
		obj, ok := object(v)
		if !ok {
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !isNull(obj[k]) {
				s.walk(md, path+"["+strconv.Quote(k)+"]", obj[k], locate)
			}
		}
	default:
		s.walk(md, path, v, locate)
	}
}

// decodeMember decodes one member alone into an empty message of type md.
func decodeMember(md protoreflect.MessageDescriptor, name string, v json.RawMessage) error {
	k, _ := json.Marshal(name)
	doc := make([]byte, 0, len(k)+len(v)+3)
	doc = append(append(append(append(doc, '{'), k...), ':'), v...)
	doc = append(doc, '}')
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(doc, dynamicpb.NewMessage(md))
}

// protoPrefix matches what protojson puts before its message: "proto:"
// (followed by a space or, deliberately at random, a no-break space) and
// a JSON position.
var protoPrefix = regexp.MustCompile(`^proto:[\s\x{00a0}]*(?:\(line \d+:\d+\):[\s\x{00a0}]*)?`)

func cleanError(err error) string {
	if err == nil {
		return "cannot be decoded"
	}
	return protoPrefix.ReplaceAllString(err.Error(), "")
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

// kindOf names the JSON kind of a value, for "must be a mapping" errors.
func kindOf(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
