package manifest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// normalizeDurations rewrites every google.protobuf.Duration in spec from
// Go's notation, which Istio's API accepts ("250ms", "1m30s"), into the
// seconds form protojson requires ("0.250000000s"). It walks the JSON
// alongside the message descriptor so only Duration fields are touched.
// A duration that is neither form is reported with its field path
// ("spec.http[0].timeout"), which protojson's own error would not name.
func normalizeDurations(spec []byte, md protoreflect.MessageDescriptor) ([]byte, error) {
	if !reachesDuration(md) {
		// Nothing to rewrite or report: skip decoding the spec (a
		// ServiceEntry has no Duration field).
		return spec, nil
	}
	var v any
	if err := json.Unmarshal(spec, &v); err != nil {
		return nil, err
	}
	w := walker{}
	w.message(v, md, "spec")
	if w.err != nil {
		return nil, w.err
	}
	if !w.changed {
		return spec, nil
	}
	return json.Marshal(v)
}

// normalizeTree is normalizeDurations for a spec already decoded (by
// blockyaml, so numbers are ints where JSON decoding gives float64s: both
// marshal alike, blockyaml's being at most 15 digits). It rewrites v in
// place and returns it as JSON.
func normalizeTree(v any, md protoreflect.MessageDescriptor) ([]byte, error) {
	if reachesDuration(md) {
		w := walker{}
		w.message(v, md, "spec")
		if w.err != nil {
			return nil, w.err
		}
	}
	return json.Marshal(v)
}

// durationKinds caches reachesDuration per message full name.
var durationKinds sync.Map

// reachesDuration reports whether a google.protobuf.Duration can occur
// anywhere in a message of md (through fields, lists and map values).
func reachesDuration(md protoreflect.MessageDescriptor) bool {
	if v, ok := durationKinds.Load(md.FullName()); ok {
		return v.(bool)
	}
	r := searchDuration(md, map[protoreflect.FullName]bool{})
	durationKinds.Store(md.FullName(), r)
	return r
}

func searchDuration(md protoreflect.MessageDescriptor, visiting map[protoreflect.FullName]bool) bool {
	if md.FullName() == "google.protobuf.Duration" || embedsMessage(md) {
		return true // an Any or TypedStruct may hold anything
	}
	if visiting[md.FullName()] {
		return false // a cycle: whatever it reaches is found from its first visit
	}
	visiting[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if fd.Kind() == protoreflect.MessageKind && searchDuration(fd.Message(), visiting) {
			return true
		}
	}
	return false
}

type walker struct {
	changed bool
	err     *config.FieldError
}

func (w *walker) message(v any, md protoreflect.MessageDescriptor, path string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	for key, val := range obj {
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(key))
		}
		if fd == nil || fd.Kind() != protoreflect.MessageKind {
			continue
		}
		field := path + "." + key
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() != protoreflect.MessageKind {
				continue
			}
			if m, ok := val.(map[string]any); ok {
				for k, item := range m {
					m[k] = w.value(item, fd.MapValue().Message(), field+"["+strconv.Quote(k)+"]")
				}
			}
		case fd.IsList():
			if list, ok := val.([]any); ok {
				for i, item := range list {
					list[i] = w.value(item, fd.Message(), fmt.Sprintf("%s[%d]", field, i))
				}
			}
		default:
			obj[key] = w.value(val, fd.Message(), field)
		}
	}
}

func (w *walker) value(v any, md protoreflect.MessageDescriptor, path string) any {
	if embedsMessage(md) {
		w.embedded(v, md, path)
		return v
	}
	if md.FullName() != "google.protobuf.Duration" {
		w.message(v, md, path)
		return v
	}
	s, ok := v.(string)
	if !ok || isProtoDuration(s) {
		return v
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if w.err == nil {
			w.err = config.FieldErrorf(path, "invalid duration %q: want a number with a unit, such as 250ms, 5s or 1m30s", s)
		}
		return v
	}
	w.changed = true
	return protoDuration(d)
}

// protoDuration formats d exactly, in whole seconds and nanoseconds: going
// through float64 seconds would add stray nanoseconds to long durations.
func protoDuration(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%d.%09ds", sign, d/time.Second, d%time.Second)
}

// isProtoDuration reports whether s is already in protojson's form: a
// decimal number of seconds followed by "s".
func isProtoDuration(s string) bool {
	num, ok := strings.CutSuffix(s, "s")
	if !ok || num == "" {
		return false
	}
	for _, r := range strings.TrimPrefix(num, "-") {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// typedStructs are the TypedStruct messages: a type_url and the message's
// JSON as a Struct in value (Envoy's typed config without the type).
var typedStructs = map[protoreflect.FullName]bool{"udpa.type.v1.TypedStruct": true, "xds.type.v3.TypedStruct": true}

// embedsMessage reports an Any or a TypedStruct, whose content is a
// message named at run time.
func embedsMessage(md protoreflect.MessageDescriptor) bool {
	return md.FullName() == "google.protobuf.Any" || typedStructs[md.FullName()]
}

// embedded walks the message inside an Any ("@type" beside its fields)
// or a TypedStruct ("type_url" and "value"), when its type is one the
// binary knows; others are left as they are.
func (w *walker) embedded(v any, md protoreflect.MessageDescriptor, path string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	url, inner, innerPath := obj["@type"], v, path
	if typedStructs[md.FullName()] {
		url, inner, innerPath = obj["type_url"], obj["value"], path+".value"
		if url == nil {
			url = obj["typeUrl"]
		}
	}
	s, ok := url.(string)
	if !ok {
		return
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(s)
	if err != nil {
		return
	}
	w.value(inner, mt.Descriptor(), innerPath)
}

// NormalizeDurationsJSON rewrites every google.protobuf.Duration in js, a
// message of md in protojson form, from Go's notation ("500ms", "1m30s"),
// which Istio's API accepts, into protojson's ("0.500000000s"), also inside
// Anys and TypedStructs of known types. root names js in errors.
func NormalizeDurationsJSON(js []byte, md protoreflect.MessageDescriptor, root string) ([]byte, error) {
	if !reachesDuration(md) {
		return js, nil
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	w := walker{}
	w.message(v, md, root)
	if w.err != nil {
		return nil, w.err
	}
	if !w.changed {
		return js, nil
	}
	return json.Marshal(v)
}
