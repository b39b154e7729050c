package crdschema

import (
	"encoding/json"
	"testing"
)

// Pruning drops what the check does not read (descriptions, defaults, CEL
// rules, formats) but keeps every keyword it reads, numbers as written, and
// properties whose names are keywords.
func TestPrune(t *testing.T) {
	in := `{"type": "object", "description": "d", "required": ["description"],
	  "x-kubernetes-validations": [{"rule": "self.a > 0"}],
	  "properties": {
	    "description": {"type": "string", "maxLength": 253, "pattern": "^[a-z]+$", "default": "x"},
	    "port": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535},
	    "weight": {"type": "number", "maximum": 1e3, "minimum": 0.5},
	    "labels": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1, "description": "v"}},
	    "any": {"type": "object", "additionalProperties": false, "x-kubernetes-preserve-unknown-fields": true},
	    "target": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
	    "list": {"type": "array", "minItems": 1, "maxItems": 16, "items": {"type": "string", "enum": ["A", "B"], "description": "i"}}
	  }}`
	got, err := prune(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{` +
		`"any":{"additionalProperties":false,"type":"object","x-kubernetes-preserve-unknown-fields":true},` +
		`"description":{"maxLength":253,"pattern":"^[a-z]+$","type":"string"},` +
		`"labels":{"additionalProperties":{"minLength":1,"type":"string"},"type":"object"},` +
		`"list":{"items":{"enum":["A","B"],"type":"string"},"maxItems":16,"minItems":1,"type":"array"},` +
		`"port":{"maximum":65535,"minimum":1,"type":"integer"},` +
		`"target":{"x-kubernetes-int-or-string":true},` +
		`"weight":{"maximum":1e3,"minimum":0.5,"type":"number"}},` +
		`"required":["description"],"type":"object"}`
	if string(js) != want {
		t.Errorf("pruned to\n%s\nwant\n%s", js, want)
	}
}
