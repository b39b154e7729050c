package manifest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// FuzzParseValidate feeds arbitrary files through the parser and the
// validator, as the file watcher will. Neither may panic, and what they
// return must keep its contract: parse errors name their document, every
// parsed object has a kind, name and spec, and validation yields only
// located field errors, the same ones on every run.
//
// Run it with a short minimization time, e.g.
//
//	go test -run='^$' -fuzz=FuzzParseValidate -fuzztime=60s -fuzzminimizetime=5s ./pkg/config/manifest
//
// The seeds are whole manifests; minimizing each new input for the default
// 60s leaves a short run almost no time to fuzz.
func FuzzParseValidate(f *testing.F) {
	seeds, _ := filepath.Glob("../validation/testdata/*.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{gatewayDoc, vsDoc, drDoc, gatewayDoc + "---\n" + vsDoc, "", "---\n", "kind: [\n",
		"apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: s}\nspec: {resolution: 7, ports: [{number: 0}]}\n",
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec: {http: [{match: [{uri: {regex: \"(\"}}], mirrorPercentage: {value: NaN}}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		configs, errs := manifest.Parse("fuzz.yaml", data, manifest.Options{})
		for _, e := range errs {
			if e == nil || e.Source == "" || e.Message == "" {
				t.Fatalf("parse error without source or message: %#v", e)
			}
		}
		for _, c := range configs {
			if c.Spec == nil || c.Name == "" || c.Namespace == "" || c.Source == "" {
				t.Fatalf("incomplete object: %+v", c.Meta)
			}
			if schema.ByKind(c.Kind).Kind != c.Kind {
				t.Fatalf("object of kind %v", c.Kind)
			}
			err := validation.Validate(c)
			if err == nil {
				continue
			}
			for _, e := range config.ErrorsFor(c.Source, c.Key(), err) {
				if e.Field == "" || e.Message == "" || e.Source != c.Source {
					t.Fatalf("validation error not located: %+v", e)
				}
			}
			if again := validation.Validate(c.DeepCopy()); again == nil || again.Error() != err.Error() {
				t.Fatalf("validation differs between runs:\n%v\n---\n%v", err, again)
			}
		}
	})
}
