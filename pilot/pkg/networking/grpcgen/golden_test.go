package grpcgen

import (
	"bytes"
	"flag"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the translator and delete goldens whose input is gone")

// translate runs what a file-mode control plane runs: parse, validate
// (invalid objects are reported and left out), index, translate.
func translate(file string, data []byte) (Resources, []*config.Error) {
	cfgs, errs := manifest.Parse(file, data, manifest.Options{})
	var valid []config.Config
	for _, c := range cfgs {
		if err := validation.Validate(c); err != nil {
			errs = append(errs, config.ErrorsFor(c.Source, c.Key(), err)...)
			continue
		}
		valid = append(valid, c)
	}
	push := model.NewPushContext(memory.New(valid))
	errs = append(errs, push.Errors...)
	res := Build(push)
	return res, append(errs, res.Errors...)
}

// render writes each section through protojson and YAML (sorted keys), so
// output is byte-for-byte stable.
func render(t *testing.T, res Resources, errs []*config.Error) []byte {
	var b bytes.Buffer
	golden.Section(t, &b, "listeners", res.Listeners)
	golden.Section(t, &b, "routes", res.Routes)
	golden.Section(t, &b, "clusters", res.Clusters)
	golden.Section(t, &b, "endpoints", res.Endpoints)
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		m := e.Error()
		if e.Warning {
			m = "warning: " + m
		}
		msgs = append(msgs, m)
	}
	golden.WriteYAML(t, &b, "errors", msgs)
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		res, errs := translate(file, data)
		checkResources(t, res)
		return render(t, res, errs)
	})
}
