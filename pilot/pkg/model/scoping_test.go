package model

import (
	"slices"
	"testing"
)

// TestExportedToParity is istiod 1.29's TestIsServiceVisible
// (pilot/pkg/model/push_context_test.go), case for case: a service of
// namespace ns seen from namespace foo.
func TestExportedToParity(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ns       string
		exportTo []string
		defaults []string
		want     bool
	}{
		{"own namespace, no exportTo, default private", "foo", nil, []string{"."}, true},
		{"other namespace, no exportTo, default private", "bar", nil, []string{"."}, false},
		{"other namespace, no exportTo, default public", "bar", nil, []string{"*"}, true},
		{"own namespace, private", "foo", []string{"."}, nil, true},
		{"other namespace, private", "bar", []string{"."}, nil, false},
		{"other namespace, public", "bar", []string{"*"}, nil, true},
		{"other namespace, exported to foo", "bar", []string{"foo"}, nil, true},
		{"other namespace, exported to baz", "bar", []string{"baz"}, nil, false},
		{"visible to none", "bar", []string{"~"}, nil, false},
		{"public and none", "bar", []string{"*", "~"}, nil, true},
		{"none and private", "bar", []string{"~", "."}, nil, false},
		{"no exportTo, no mesh default", "bar", nil, nil, true},
	} {
		if got := exportedTo(tc.exportTo, tc.defaults, tc.ns, "foo"); got != tc.want {
			t.Errorf("%s: exportedTo = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseExportToAnnotation(t *testing.T) {
	for in, want := range map[string][]string{
		"":           nil,
		".":          {"."},
		"bank, edge": {"bank", "edge"},
		" *":         {"*"},
		"a,,b":       {"a", "b"},
	} {
		if got := ParseExportToAnnotation(in); !slices.Equal(got, want) {
			t.Errorf("ParseExportToAnnotation(%q) = %q, want %q", in, got, want)
		}
	}
}
