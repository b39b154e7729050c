// Package nettest builds push contexts from YAML for translator tests and
// benchmarks, so each test package need not write its own store.
package nettest

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// Parse parses YAML documents, failing the test on any parse error. It does
// not validate, so tests can feed translators what validation would stop.
func Parse(tb testing.TB, docs string) []config.Config {
	tb.Helper()
	cfgs, errs := manifest.Parse("test.yaml", []byte(docs), manifest.Options{})
	if len(errs) > 0 {
		tb.Fatalf("parse: %v", errs)
	}
	return cfgs
}

// PushFromYAML indexes YAML documents into a push context.
func PushFromYAML(tb testing.TB, docs string) *model.PushContext {
	tb.Helper()
	return model.NewPushContext(memory.New(Parse(tb, docs)))
}
