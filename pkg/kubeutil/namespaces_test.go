package kubeutil

import (
	"slices"
	"testing"
)

func TestNormalizeNamespaces(t *testing.T) {
	if got := NormalizeNamespaces([]string{"b", "", "a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("NormalizeNamespaces = %q", got)
	}
	if got := NormalizeNamespaces(nil); !slices.Equal(got, []string{""}) {
		t.Errorf("NormalizeNamespaces(nil) = %q", got)
	}
}
