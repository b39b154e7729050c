package grpcgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

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
	section(t, &b, "listeners", res.Listeners)
	section(t, &b, "routes", res.Routes)
	section(t, &b, "clusters", res.Clusters)
	section(t, &b, "endpoints", res.Endpoints)
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		m := e.Error()
		if e.Warning {
			m = "warning: " + m
		}
		msgs = append(msgs, m)
	}
	writeYAML(t, &b, "errors", msgs)
	return b.Bytes()
}

func section[M proto.Message](t *testing.T, b *bytes.Buffer, name string, msgs []M) {
	items := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		js, err := protojson.Marshal(m)
		if err != nil {
			t.Fatalf("%s: protojson: %v", name, err)
		}
		items = append(items, js)
	}
	writeYAML(t, b, name, items)
}

func writeYAML(t *testing.T, b *bytes.Buffer, name string, v any) {
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if bytes.Equal(y, []byte("[]\n")) {
		b.WriteString(name + ": []\n")
		return
	}
	b.WriteString(name + ":\n")
	b.Write(y)
}

func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		res, errs := translate(file, data)
		checkResources(t, res)
		return render(t, res, errs)
	})
}
