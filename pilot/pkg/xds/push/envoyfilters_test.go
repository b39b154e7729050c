package push

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/envoyfilter"
)

// A withheld (patch, resource) pair holds while its EnvoyFilter's spec is
// the one a gateway rejected; an edited filter is tried again, and adding
// pairs of the new spec drops those of the old.
func TestWithholdingFollowsTheSpec(t *testing.T) {
	var w withholding
	pair := envoyfilter.Withheld{Patch: envoyfilter.PatchRef{Namespace: "ns", Name: "f", Index: 0},
		Resource: envoyfilter.ResourceRef{Type: envoyfilter.Listener, Name: "0.0.0.0_80"}}
	v1 := map[filterName]string{{"ns", "f"}: "v1"}
	v2 := map[filterName]string{{"ns", "f"}: "v2"}
	if !w.add([]envoyfilter.Withheld{pair}, v1) {
		t.Fatal("first rejection: nothing new")
	}
	if w.add([]envoyfilter.Withheld{pair}, v1) {
		t.Error("the same rejection again counted as new (would push again)")
	}
	if got := w.snapshot(v1); !got[pair] {
		t.Errorf("withheld for the rejected spec: %v", got)
	}
	if got := w.snapshot(v2); got[pair] {
		t.Error("an edited filter is still withheld")
	}
	if !w.add([]envoyfilter.Withheld{pair}, v2) || !w.snapshot(v2)[pair] || w.snapshot(v1)[pair] {
		t.Error("a rejection of the edited spec does not replace the old one")
	}
}
