package manifest

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// specFromTree sets m from v, a spec blockyaml decoded, to what
// protojson.Unmarshal gives for the spec's JSON after normalizeTree:
// durations in Go's notation ("250ms") taken as normalizeTree rewrites
// them. It skips the JSON in between, which made up half of a file-mode
// start's parsing (BenchmarkParseAll).
//
// It decodes only what it can decode exactly as protojson does: objects,
// lists, string-keyed maps, strings, booleans, integers, enums by name or
// number, Durations and the scalar wrappers. It reports false on anything
// else, and on anything protojson or normalizeTree would refuse (an
// unknown field, a field given twice, two fields of a oneof, a null, a
// value of the wrong type, a bad duration), leaving m partly set: the
// caller resets m and decodes the JSON, whose error names the problem.
func specFromTree(v any, m protoreflect.Message) bool {
	return treeMessage(v, m, 0)
}

// treeMaxDepth bounds the recursion; deeper specs take the JSON way.
const treeMaxDepth = 100

func treeMessage(v any, m protoreflect.Message, depth int) bool {
	if depth > treeMaxDepth {
		return false
	}
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Duration":
		return treeDuration(v, m)
	case "google.protobuf.BoolValue", "google.protobuf.StringValue",
		"google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value",
		"google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		// protojson takes a wrapper's JSON as its value field's.
		fd := md.Fields().ByNumber(1)
		val, ok := treeScalar(v, fd)
		if ok {
			m.Set(fd, val)
		}
		return ok
	}
	if md.ParentFile().Package() == "google.protobuf" {
		return false // Struct, Value, Any, Timestamp and the rest: protojson's own forms
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	fields := md.Fields()
	for key, val := range obj {
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByTextName(key)
		}
		if fd == nil || val == nil || givenTwice(obj, key, fd) {
			return false
		}
		switch {
		case fd.IsList():
			if !treeList(val, m.Mutable(fd).List(), fd, depth) {
				return false
			}
		case fd.IsMap():
			if !treeMap(val, m.Mutable(fd).Map(), fd, depth) {
				return false
			}
		case fd.Message() != nil:
			nv := m.NewField(fd)
			if !treeMessage(val, nv.Message(), depth+1) {
				return false
			}
			m.Set(fd, nv)
		default:
			sv, ok := treeScalar(val, fd)
			if !ok {
				return false
			}
			m.Set(fd, sv)
		}
	}
	return true
}

// givenTwice reports whether obj, besides key, sets fd under its other
// name (JSON and proto names are both accepted) or sets another field of
// fd's oneof: protojson refuses both.
func givenTwice(obj map[string]any, key string, fd protoreflect.FieldDescriptor) bool {
	if other := fd.JSONName(); other != key {
		if _, ok := obj[other]; ok {
			return true
		}
	}
	if other := fd.TextName(); other != key {
		if _, ok := obj[other]; ok {
			return true
		}
	}
	od := fd.ContainingOneof()
	if od == nil {
		return false
	}
	for i := range od.Fields().Len() {
		f := od.Fields().Get(i)
		if f.Number() == fd.Number() {
			continue
		}
		if _, ok := obj[f.JSONName()]; ok {
			return true
		}
		if _, ok := obj[f.TextName()]; ok {
			return true
		}
	}
	return false
}

func treeList(v any, list protoreflect.List, fd protoreflect.FieldDescriptor, depth int) bool {
	items, ok := v.([]any)
	if !ok {
		return false
	}
	for _, item := range items {
		if item == nil {
			return false
		}
		if fd.Message() != nil {
			ev := list.NewElement()
			if !treeMessage(item, ev.Message(), depth+1) {
				return false
			}
			list.Append(ev)
			continue
		}
		sv, ok := treeScalar(item, fd)
		if !ok {
			return false
		}
		list.Append(sv)
	}
	return true
}

func treeMap(v any, mp protoreflect.Map, fd protoreflect.FieldDescriptor, depth int) bool {
	entries, ok := v.(map[string]any)
	if !ok || fd.MapKey().Kind() != protoreflect.StringKind {
		return false
	}
	vd := fd.MapValue()
	for k, item := range entries {
		if item == nil || !utf8.ValidString(k) {
			return false
		}
		key := protoreflect.ValueOfString(strings.Clone(k)).MapKey()
		if vd.Message() != nil {
			ev := mp.NewValue()
			if !treeMessage(item, ev.Message(), depth+1) {
				return false
			}
			mp.Set(key, ev)
			continue
		}
		sv, ok := treeScalar(item, vd)
		if !ok {
			return false
		}
		mp.Set(key, sv)
	}
	return true
}

// treeScalar is v as fd's scalar kind, where protojson reads the JSON of
// v alike. blockyaml's numbers are ints of at most 15 digits, which both
// float kinds hold exactly only up to their mantissa.
func treeScalar(v any, fd protoreflect.FieldDescriptor) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if b, ok := v.(bool); ok {
			return protoreflect.ValueOfBool(b), true
		}
	case protoreflect.StringKind:
		// json.Marshal would replace invalid UTF-8; the JSON way keeps that.
		// A clone: blockyaml's strings share the document's memory, which
		// a spec must not keep alive.
		if s, ok := v.(string); ok && utf8.ValidString(s) {
			return protoreflect.ValueOfString(strings.Clone(s)), true
		}
	case protoreflect.EnumKind:
		switch e := v.(type) {
		case string:
			if ev := fd.Enum().Values().ByName(protoreflect.Name(e)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), true
			}
		case int:
			if e >= math.MinInt32 && e <= math.MaxInt32 {
				return protoreflect.ValueOfEnum(protoreflect.EnumNumber(e)), true
			}
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if n, ok := v.(int); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			return protoreflect.ValueOfInt32(int32(n)), true
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if n, ok := v.(int); ok {
			return protoreflect.ValueOfInt64(int64(n)), true
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if n, ok := v.(int); ok && n >= 0 && n <= math.MaxUint32 {
			return protoreflect.ValueOfUint32(uint32(n)), true
		}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if n, ok := v.(int); ok && n >= 0 {
			return protoreflect.ValueOfUint64(uint64(n)), true
		}
	case protoreflect.FloatKind:
		if n, ok := v.(int); ok && n >= -1<<24 && n <= 1<<24 {
			return protoreflect.ValueOfFloat32(float32(n)), true
		}
	case protoreflect.DoubleKind:
		if n, ok := v.(int); ok && n >= -1<<53 && n <= 1<<53 {
			return protoreflect.ValueOfFloat64(float64(n)), true
		}
	}
	return protoreflect.Value{}, false
}

// treeDuration sets the Duration m from v: protojson's form ("1.5s"),
// which normalizeTree leaves alone, or Go's ("1m30s"), which it rewrites
// exactly into protojson's.
func treeDuration(v any, m protoreflect.Message) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	var secs int64
	var nanos int32
	if isProtoDuration(s) {
		if secs, nanos, ok = protoSeconds(s); !ok {
			return false
		}
	} else {
		d, err := time.ParseDuration(s)
		if err != nil || d == math.MinInt64 {
			return false
		}
		secs, nanos = int64(d/time.Second), int32(d%time.Second)
	}
	fields := m.Descriptor().Fields()
	m.Set(fields.ByName("seconds"), protoreflect.ValueOfInt64(secs))
	m.Set(fields.ByName("nanos"), protoreflect.ValueOfInt32(nanos))
	return true
}

// maxDurationSeconds is protojson's bound on a Duration (10,000 years).
const maxDurationSeconds = 315576000000

// protoSeconds reads the common shape of protojson's duration: an
// optional "-", "0" or digits not starting with 0, and one to nine
// fractional digits after a ".", then "s". Other shapes protojson takes
// (".5s", "5.s", "+5s") report false and go the JSON way.
func protoSeconds(s string) (int64, int32, bool) {
	num := s[:len(s)-1] // isProtoDuration: ends in "s"
	neg := false
	if num != "" && num[0] == '-' {
		neg, num = true, num[1:]
	}
	whole, frac, hasFrac := strings.Cut(num, ".")
	if whole == "" || (whole[0] == '0' && len(whole) > 1) || !allDigits(whole) || len(whole) > 12 {
		return 0, 0, false
	}
	if hasFrac && (frac == "" || len(frac) > 9 || !allDigits(frac)) {
		return 0, 0, false
	}
	secs, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || secs > maxDurationSeconds {
		return 0, 0, false
	}
	var nanos int64
	for i := range 9 {
		nanos *= 10
		if i < len(frac) {
			nanos += int64(frac[i] - '0')
		}
	}
	if neg {
		secs, nanos = -secs, -nanos
	}
	return secs, int32(nanos), true
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
