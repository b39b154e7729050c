package workload

import (
	"os"
	"path/filepath"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
)

// The scenario's EnvoyFilters parse, validate and, applied by analysis as
// the server applies them, every patch matches something and validates:
// no finding at all, or the benchmark would measure patches that do
// nothing. A scenario without them has no file.
func TestEnvoyFilterScenarioAnalyzesClean(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Options{Services: 10, Endpoints: 1, EnvoyFilters: 10}); err != nil {
		t.Fatal(err)
	}
	cfgs, srcErrs, _, err := analysis.Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range analysis.Analyze(cfgs, srcErrs, analysis.Options{}) {
		t.Errorf("finding: %v", e)
	}
	kinds := map[networking.EnvoyFilter_ApplyTo]int{}
	n := 0
	for _, c := range cfgs {
		if ef, ok := c.Spec.(*networking.EnvoyFilter); ok {
			n++
			kinds[ef.GetConfigPatches()[0].GetApplyTo()]++
		}
	}
	if n != 10 || kinds[networking.EnvoyFilter_HTTP_FILTER] != 4 || kinds[networking.EnvoyFilter_CLUSTER] != 2 {
		t.Errorf("%d EnvoyFilters, patches %v", n, kinds)
	}
	if err := Write(dir, Options{Services: 10, Endpoints: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, EnvoyFilterFile)); !os.IsNotExist(err) {
		t.Errorf("%s kept without EnvoyFilters: %v", EnvoyFilterFile, err)
	}
}
