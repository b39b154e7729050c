package grpcgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
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
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/*.in.yaml inputs (err %v)", err)
	}
	cases := map[string]bool{}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		cases[name] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Base(in)
			res, errs := translate(file, data)
			checkResources(t, res)
			got := render(t, res, errs)
			res2, errs2 := translate(file, data)
			if again := render(t, res2, errs2); !bytes.Equal(got, again) {
				t.Errorf("two translations of the same input differ:\n%s", firstDiff(got, again))
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", golden, firstDiff(want, got))
			}
		})
	}
	goldens, _ := filepath.Glob(filepath.Join("testdata", "*.golden.yaml"))
	for _, g := range goldens {
		if cases[strings.TrimSuffix(filepath.Base(g), ".golden.yaml")] {
			continue
		}
		if *update {
			if err := os.Remove(g); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s has no input; run with -update to delete it", g)
	}
}

// firstDiff shows the first differing line.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(no line differs)"
}
