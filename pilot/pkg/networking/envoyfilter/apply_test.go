package envoyfilter

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
)

func loadCase(t *testing.T, name string) Input {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return loadInput(t, data)
}

// A NACKed resource's patches, read from Touched and fed back as
// Withhold, give back the resource as translated: the gateway converges
// on the unpatched configuration.
func TestWithholdingTouchedPatchesRestoresTheResource(t *testing.T) {
	in := loadCase(t, "recipe-global-ratelimit")
	res := Apply(in)
	nacked := ResourceRef{Type: Listener, Name: "0.0.0.0_8080"}
	patches := res.Touched[nacked]
	if len(patches) == 0 {
		t.Fatalf("no patch touched %s", nacked)
	}
	in.Withhold = map[Withheld]bool{}
	for _, p := range patches {
		in.Withhold[Withheld{Patch: p, Resource: nacked}] = true
	}
	again := Apply(in)
	if !proto.Equal(again.Listeners[0], in.Listeners[0]) {
		t.Errorf("withheld listener differs from the translated one")
	}
	if proto.Equal(again.Listeners[1], in.Listeners[1]) {
		t.Errorf("the patch was withheld from %s too", in.Listeners[1].GetName())
	}
	if _, ok := again.Touched[nacked]; ok {
		t.Errorf("withheld listener still recorded as touched: %v", again.Touched[nacked])
	}
}

// Resources no patch changes are served as given (no clone), in new
// slices: the caller's slices are never appended to.
func TestUnpatchedResourcesAreSharedAndSlicesNew(t *testing.T) {
	in := loadCase(t, "recipe-listener-merge")
	res := Apply(in)
	if res.Listeners[1] != in.Listeners[1] || res.Clusters[0] != in.Clusters[0] || res.RouteConfigurations[0] != in.RouteConfigurations[0] {
		t.Errorf("an unpatched resource was copied")
	}
	if res.Listeners[0] == in.Listeners[0] {
		t.Errorf("the patched listener is the input's")
	}
	if &res.Listeners[0] == &in.Listeners[0] || &res.Clusters[0] == &in.Clusters[0] {
		t.Errorf("result shares the input's slice")
	}
}

// With no filters Apply is the identity.
func TestApplyWithoutFilters(t *testing.T) {
	in := loadCase(t, "recipe-lua")
	in.Filters = nil
	res := Apply(in)
	if len(res.Patches) != 0 || len(res.Errors) != 0 || len(res.Touched) != 0 {
		t.Errorf("unexpected report: %+v", res)
	}
	for i := range in.Listeners {
		if res.Listeners[i] != in.Listeners[i] {
			t.Errorf("listener %d changed", i)
		}
	}
}

// A Values cache shared by several Apply calls gives the same results as
// building every value each time, including the reports of bad values.
func TestValuesCacheGivesTheSameResult(t *testing.T) {
	for _, name := range []string{"broken-patches", "recipe-global-ratelimit"} {
		in := loadCase(t, name)
		want := render(t, in, Apply(in))
		in.Values = NewValues()
		for range 2 {
			if got := render(t, in, Apply(in)); string(got) != string(want) {
				t.Errorf("%s: with a Values cache:\n%s\nwant:\n%s", name, got, want)
			}
		}
	}
}
