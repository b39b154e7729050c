package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// openAPISchema is the part of a CRD's structural openAPIV3Schema that
// file mode checks, as the Kubernetes API server does on create: types,
// known fields, required fields, enums, patterns and bounds. CEL rules
// (x-kubernetes-validations) are not evaluated; what they guard that
// conversion cannot serve is refused by conversion, naming the field.
type openAPISchema struct {
	Type                 string                    `json:"type"`
	Properties           map[string]*openAPISchema `json:"properties"`
	Items                *openAPISchema            `json:"items"`
	AdditionalProperties *additionalProperties     `json:"additionalProperties"`
	Required             []string                  `json:"required"`
	Enum                 []any                     `json:"enum"`
	Pattern              string                    `json:"pattern"`
	Minimum              *float64                  `json:"minimum"`
	Maximum              *float64                  `json:"maximum"`
	MinLength            *int                      `json:"minLength"`
	MaxLength            *int                      `json:"maxLength"`
	MinItems             *int                      `json:"minItems"`
	MaxItems             *int                      `json:"maxItems"`
	PreserveUnknown      bool                      `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString          bool                      `json:"x-kubernetes-int-or-string"`

	pattern *regexp.Regexp
}

// additionalProperties is a schema (a map's values) or a boolean.
type additionalProperties struct {
	Allowed bool
	Schema  *openAPISchema
}

func (a *additionalProperties) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &a.Allowed); err == nil {
		return nil
	}
	a.Allowed = true
	return json.Unmarshal(b, &a.Schema)
}

// compile compiles every pattern once; a pattern Go cannot compile is not
// checked (the API server uses Go's regexp too, so none is expected).
func (s *openAPISchema) compile() {
	if s == nil {
		return
	}
	if s.Pattern != "" {
		s.pattern, _ = regexp.Compile(s.Pattern)
	}
	for _, p := range s.Properties {
		p.compile()
	}
	s.Items.compile()
	if s.AdditionalProperties != nil {
		s.AdditionalProperties.Schema.compile()
	}
}

// check returns the first problem of v at path (object keys in sorted
// order, so the answer is deterministic), or nil.
func (s *openAPISchema) check(v any, path string) *config.FieldError {
	if s == nil || v == nil {
		return nil
	}
	if s.IntOrString {
		switch v.(type) {
		case string, float64:
			return nil
		}
		return config.FieldErrorf(path, "must be an integer or a string, not %s", jsonType(v))
	}
	switch s.Type {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return config.FieldErrorf(path, "must be an object, not %s", jsonType(v))
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				return config.FieldErrorf(path+"."+r, "required field is missing")
			}
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			child := path + "." + k
			if p, ok := s.Properties[k]; ok {
				if err := p.check(obj[k], child); err != nil {
					return err
				}
				continue
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Allowed {
				if err := s.AdditionalProperties.Schema.check(obj[k], child); err != nil {
					return err
				}
				continue
			}
			if s.PreserveUnknown {
				continue
			}
			return config.FieldErrorf(child, "unknown field%s", known(s.Properties))
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return config.FieldErrorf(path, "must be a list, not %s", jsonType(v))
		}
		if s.MinItems != nil && len(arr) < *s.MinItems {
			return config.FieldErrorf(path, "must have at least %d items, has %d", *s.MinItems, len(arr))
		}
		if s.MaxItems != nil && len(arr) > *s.MaxItems {
			return config.FieldErrorf(path, "must have at most %d items, has %d", *s.MaxItems, len(arr))
		}
		for i, item := range arr {
			if err := s.Items.check(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return config.FieldErrorf(path, "must be a string, not %s", jsonType(v))
		}
		n := len([]rune(str))
		if s.MinLength != nil && n < *s.MinLength {
			return config.FieldErrorf(path, "%q must be at least %d characters long", str, *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return config.FieldErrorf(path, "must be at most %d characters long, is %d", *s.MaxLength, n)
		}
		if s.pattern != nil && !s.pattern.MatchString(str) {
			return config.FieldErrorf(path, "%q does not match the pattern %s", str, s.Pattern)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok {
			return config.FieldErrorf(path, "must be a number, not %s", jsonType(v))
		}
		if s.Type == "integer" && f != math.Trunc(f) {
			return config.FieldErrorf(path, "must be an integer, not %v", f)
		}
		if s.Minimum != nil && f < *s.Minimum {
			return config.FieldErrorf(path, "%v is less than the minimum %v", f, *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return config.FieldErrorf(path, "%v is more than the maximum %v", f, *s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return config.FieldErrorf(path, "must be true or false, not %s", jsonType(v))
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		var want []string
		for _, e := range s.Enum {
			want = append(want, fmt.Sprint(e))
		}
		return config.FieldErrorf(path, "%v is not one of %s", v, strings.Join(want, ", "))
	}
	return nil
}

// known lists the fields an object may have, for an unknown field's
// message.
func known(props map[string]*openAPISchema) string {
	if len(props) == 0 {
		return ""
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return " (known: " + strings.Join(names, ", ") + ")"
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
