package manifest

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// objectFields are object's JSON field names, top level and metadata.
var objectFields = map[string][]string{
	"":         {"apiVersion", "kind", "metadata", "spec"},
	"metadata": {"name", "namespace", "labels", "annotations", "resourceVersion", "generation", "creationTimestamp"},
}

// fromTree fills o from a document blockyaml decoded, without going
// through JSON, when that gives exactly what decoding the document's JSON
// would: every field of the type object expects, or absent or null. It
// reports false for anything else (a number where a string belongs, a
// key matching a field only case-insensitively, a creation timestamp),
// and the caller decodes the JSON, whose errors name the problem.
func (o *object) fromTree(tree map[string]any) bool {
	if !plainFields(tree, "") {
		return false
	}
	var ok bool
	if o.APIVersion, ok = optString(tree["apiVersion"]); !ok {
		return false
	}
	if o.Kind, ok = optString(tree["kind"]); !ok {
		return false
	}
	if meta := tree["metadata"]; meta != nil {
		m, isMap := meta.(map[string]any)
		if !isMap || !plainFields(m, "metadata") || m["creationTimestamp"] != nil {
			return false
		}
		md := &o.Metadata
		for _, f := range []struct {
			dst *string
			key string
		}{{&md.Name, "name"}, {&md.Namespace, "namespace"}, {&md.ResourceVersion, "resourceVersion"}} {
			if *f.dst, ok = optString(m[f.key]); !ok {
				return false
			}
		}
		if g := m["generation"]; g != nil {
			n, isInt := g.(int)
			if !isInt {
				return false
			}
			md.Generation = int64(n)
		}
		if md.Labels, ok = stringMap(m["labels"]); !ok {
			return false
		}
		if md.Annotations, ok = stringMap(m["annotations"]); !ok {
			return false
		}
	}
	o.tree = tree
	return true
}

// plainFields reports whether every key of m that names one of the
// section's fields names it exactly (encoding/json would also take "Kind"
// for kind).
func plainFields(m map[string]any, section string) bool {
	for k := range m {
		for _, f := range objectFields[section] {
			if k != f && strings.EqualFold(k, f) {
				return false
			}
		}
	}
	return true
}

// optString and stringMap copy the strings they return: blockyaml's
// strings share one copy of the whole document, which the config's
// metadata would otherwise keep alive.
func optString(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return strings.Clone(s), ok
}

// stringMap converts a map of strings; a null entry is declined (JSON
// decoding gives it a zero value, which we leave to it).
func stringMap(v any) (map[string]string, bool) {
	if v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out[strings.Clone(k)] = strings.Clone(s)
	}
	return out, true
}

// specJSON is the document's spec as JSON for protojson, its durations
// normalized (normalizeDurations); nil when it has none or it is null.
func (o *object) specJSON(md protoreflect.MessageDescriptor) ([]byte, error) {
	if o.tree != nil {
		if v := o.tree["spec"]; v != nil {
			return normalizeTree(v, md)
		}
		return nil, nil
	}
	if len(o.Spec) == 0 || string(o.Spec) == "null" {
		return nil, nil
	}
	return normalizeDurations(o.Spec, md)
}
