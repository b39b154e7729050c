package manifest_test

import (
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

const gatewayDoc = `apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: public
  namespace: edge
  labels: {team: net}
  annotations: {note: hello}
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2024-05-01T10:00:00Z"
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
`

const vsDoc = `apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata:
  name: reviews
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: v1}
      weight: 100
`

const drDoc = `apiVersion: networking.istio.io/v1alpha3
kind: DestinationRule
metadata: {name: reviews, namespace: prod}
spec:
  host: reviews
  trafficPolicy:
    connectionPool:
      tcp: {connectTimeout: 0.25s}
`

func TestParseDocuments(t *testing.T) {
	data := "# leading comment\n" + gatewayDoc + "---\n# only a comment\n---\n" + vsDoc + "---   \n" + drDoc + "---\n"
	configs, errs := manifest.Parse("samples/bookinfo.yaml", []byte(data), manifest.Options{})
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(configs) != 3 {
		t.Fatalf("got %d configs, want 3", len(configs))
	}

	gw := configs[0]
	wantMeta := config.Meta{
		Kind: schema.Gateway, Name: "public", Namespace: "edge",
		Labels: map[string]string{"team": "net"}, Annotations: map[string]string{"note": "hello"},
		ResourceVersion: "42", Generation: 3,
		CreationTimestamp: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		Source:            "samples/bookinfo.yaml (document 1)",
	}
	if gw.Kind != wantMeta.Kind || gw.Name != wantMeta.Name || gw.Namespace != wantMeta.Namespace ||
		gw.Labels["team"] != "net" || gw.Annotations["note"] != "hello" || gw.ResourceVersion != "42" ||
		gw.Generation != 3 || !gw.CreationTimestamp.Equal(wantMeta.CreationTimestamp) || gw.Source != wantMeta.Source {
		t.Errorf("gateway meta = %+v, want %+v", gw.Meta, wantMeta)
	}
	spec, ok := gw.Spec.(*networking.Gateway)
	if !ok {
		t.Fatalf("gateway spec is %T", gw.Spec)
	}
	if len(spec.Servers) != 1 || spec.Servers[0].GetPort().GetNumber() != 80 || spec.Selector["istio"] != "ingressgateway" {
		t.Errorf("gateway spec = %v", spec)
	}

	// The comment-only document between them is not counted.
	vs := configs[1]
	if vs.Kind != schema.VirtualService || vs.Namespace != "default" || vs.Source != "samples/bookinfo.yaml (document 2)" {
		t.Errorf("virtual service meta = %+v", vs.Meta)
	}
	if got := vs.Spec.(*networking.VirtualService).GetHttp()[0].GetRoute()[0].GetDestination().GetSubset(); got != "v1" {
		t.Errorf("subset = %q, want v1", got)
	}

	dr := configs[2]
	if dr.Kind != schema.DestinationRule || dr.Namespace != "prod" || dr.Source != "samples/bookinfo.yaml (document 3)" {
		t.Errorf("destination rule meta = %+v", dr.Meta)
	}
	ct := dr.Spec.(*networking.DestinationRule).GetTrafficPolicy().GetConnectionPool().GetTcp().GetConnectTimeout()
	if ct.AsDuration() != 250*time.Millisecond {
		t.Errorf("connectTimeout = %v, want 250ms", ct.AsDuration())
	}
}

func TestParseDefaultNamespace(t *testing.T) {
	for _, tc := range []struct {
		opts manifest.Options
		doc  string
		want string
	}{
		{manifest.Options{}, vsDoc, "default"},
		{manifest.Options{DefaultNamespace: "team-a"}, vsDoc, "team-a"},
		{manifest.Options{DefaultNamespace: "team-a"}, drDoc, "prod"},
	} {
		configs, errs := manifest.Parse("f.yaml", []byte(tc.doc), tc.opts)
		if len(errs) != 0 || len(configs) != 1 {
			t.Fatalf("Parse: %d configs, errors %v", len(configs), errs)
		}
		if configs[0].Namespace != tc.want {
			t.Errorf("namespace = %q, want %q", configs[0].Namespace, tc.want)
		}
	}
}

func TestParseNothing(t *testing.T) {
	for _, data := range []string{"", "\n\n", "# comment\n", "---\n---\n", "# a\n---\n   \n# b\n"} {
		configs, errs := manifest.Parse("empty.yaml", []byte(data), manifest.Options{})
		if len(configs) != 0 || len(errs) != 0 {
			t.Errorf("Parse(%q) = %d configs, %v", data, len(configs), errs)
		}
	}
}

func TestParseNullAndEmptySpec(t *testing.T) {
	for _, spec := range []string{"spec:\n", "spec: null\n", "spec: {}\n", ""} {
		doc := "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: se}\n" + spec
		configs, errs := manifest.Parse("f.yaml", []byte(doc), manifest.Options{})
		if len(errs) != 0 || len(configs) != 1 {
			t.Fatalf("Parse(%q): %d configs, errors %v", spec, len(configs), errs)
		}
		se, ok := configs[0].Spec.(*networking.ServiceEntry)
		if !ok || se == nil || len(se.Hosts) != 0 {
			t.Errorf("spec %q parsed as %#v", spec, configs[0].Spec)
		}
	}
}

func TestParseCRLF(t *testing.T) {
	data := strings.ReplaceAll(vsDoc+"---\n"+drDoc, "\n", "\r\n")
	configs, errs := manifest.Parse("win.yaml", []byte(data), manifest.Options{})
	if len(errs) != 0 || len(configs) != 2 {
		t.Fatalf("Parse: %d configs, errors %v", len(configs), errs)
	}
}

// TestParseErrors checks each kind of bad document yields one error that
// names the document and, where it can, the object and field, and that
// the good document after it still parses.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		field string
		key   config.Key
		msg   string
	}{
		{name: "invalid YAML", doc: "kind: [unclosed\n", msg: "invalid YAML"},
		{name: "not a mapping", doc: "- a\n- b\n", msg: "invalid object"},
		{name: "scalar", doc: "just text\n", msg: "invalid object"},
		{name: "missing kind", doc: "apiVersion: networking.istio.io/v1\nmetadata: {name: x}\n",
			field: "kind", msg: "apiVersion and kind are required"},
		{name: "missing apiVersion", doc: "kind: Gateway\nmetadata: {name: x}\n",
			field: "kind", msg: "apiVersion and kind are required"},
		{name: "apiVersion without group", doc: "apiVersion: v1\nkind: Gateway\nmetadata: {name: x}\n",
			field: "apiVersion", msg: "want group/version"},
		{name: "unsupported version", doc: "apiVersion: networking.istio.io/v2\nkind: Gateway\nmetadata: {name: x}\n",
			field: "apiVersion", msg: "not supported"},
		{name: "unknown kind", doc: "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: x}\n",
			field: "apiVersion", msg: "not a kind Wayfinder reads"},
		{name: "missing name", doc: "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {namespace: ns}\n",
			field: "metadata.name", key: config.Key{Kind: schema.Gateway, Namespace: "ns"}, msg: "name is required"},
		{name: "label that is not a string", doc: "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: x, labels: {a: [1]}}\n",
			msg: "invalid object"},
		{name: "unknown spec field", doc: "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec: {servres: []}\n",
			field: "spec", key: config.Key{Kind: schema.Gateway, Namespace: "default", Name: "gw"}, msg: `unknown field "servres"`},
		{name: "wrong type in spec", doc: "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: vs}\nspec: {hosts: example.com}\n",
			field: "spec", key: config.Key{Kind: schema.VirtualService, Namespace: "default", Name: "vs"}, msg: "unexpected token"},
		{name: "unknown enum name", doc: "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: se}\nspec: {resolution: MAGIC}\n",
			field: "spec", key: config.Key{Kind: schema.ServiceEntry, Namespace: "default", Name: "se"}, msg: "MAGIC"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.doc + "---\n" + vsDoc
			configs, errs := manifest.Parse("bad.yaml", []byte(data), manifest.Options{})
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
			}
			e := errs[0]
			if e.Source != "bad.yaml (document 1)" || e.Field != tc.field || e.Key != tc.key || e.Warning {
				t.Errorf("error = %+v, want source document 1, field %q, key %v", e, tc.field, tc.key)
			}
			if !strings.Contains(e.Message, tc.msg) {
				t.Errorf("message %q does not mention %q", e.Message, tc.msg)
			}
			if !strings.HasPrefix(e.Error(), "bad.yaml (document 1): ") {
				t.Errorf("Error() = %q does not start with the source", e.Error())
			}
			if len(configs) != 1 || configs[0].Name != "reviews" || configs[0].Source != "bad.yaml (document 2)" {
				t.Errorf("the good document did not survive: %+v", configs)
			}
		})
	}
}

// TestParseMessagesAreClean checks protojson's unstable decorations (the
// "proto:" prefix, positions in the converted JSON, non-breaking spaces)
// are gone, so messages read the same from run to run.
func TestParseMessagesAreClean(t *testing.T) {
	doc := "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec: {servers: [{port: {number: eighty}}]}\n"
	_, errs := manifest.Parse("f.yaml", []byte(doc), manifest.Options{})
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	msg := errs[0].Message
	if strings.Contains(msg, "proto:") || strings.Contains(msg, "(line ") || strings.Contains(msg, "\u00a0") || msg == "" {
		t.Errorf("message not cleaned: %q", msg)
	}
}

// TestParseGoStyleDurations checks durations in the form Istio's
// documentation uses reach the spec exactly.
func TestParseGoStyleDurations(t *testing.T) {
	doc := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: r}\n" +
		"spec: {host: r, trafficPolicy: {connectionPool: {tcp: {connectTimeout: 30ms, idleTimeout: 1h30m}}}}\n"
	configs, errs := manifest.Parse("f.yaml", []byte(doc), manifest.Options{})
	if len(errs) != 0 || len(configs) != 1 {
		t.Fatalf("Parse: %d configs, errors %v", len(configs), errs)
	}
	tcp := configs[0].Spec.(*networking.DestinationRule).GetTrafficPolicy().GetConnectionPool().GetTcp()
	if got := tcp.GetConnectTimeout().AsDuration(); got != 30*time.Millisecond {
		t.Errorf("connectTimeout = %v, want 30ms", got)
	}
	if got := tcp.GetIdleTimeout().AsDuration(); got != 90*time.Minute {
		t.Errorf("idleTimeout = %v, want 1h30m", got)
	}
}

// TestParseExactness covers two ways the parser once surprised users.
func TestParseExactness(t *testing.T) {
	t.Run("duration precision", func(t *testing.T) {
		// Converting through float64 seconds adds nanoseconds to long
		// durations, which validation then rejects as not whole
		// milliseconds.
		doc := "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\n" +
			"spec: {hosts: [a.example.com], http: [{timeout: 10000h0m0.001s, route: [{destination: {host: a}}]}]}\n"
		configs, errs := manifest.Parse("f.yaml", []byte(doc), manifest.Options{})
		if len(errs) != 0 || len(configs) != 1 {
			t.Fatalf("Parse: %d configs, errors %v", len(configs), errs)
		}
		want := 10000*time.Hour + time.Millisecond
		if got := configs[0].Spec.(*networking.VirtualService).GetHttp()[0].GetTimeout().AsDuration(); got != want {
			t.Errorf("timeout = %v, want %v", got, want)
		}
	})
	t.Run("numbering after a leading separator", func(t *testing.T) {
		// A file that starts with "---" has its first object called
		// "document 2".
		configs, errs := manifest.Parse("f.yaml", []byte("---\n"+vsDoc), manifest.Options{})
		if len(errs) != 0 || len(configs) != 1 {
			t.Fatalf("Parse: %d configs, errors %v", len(configs), errs)
		}
		if configs[0].Source != "f.yaml (document 1)" {
			t.Errorf("source is %q", configs[0].Source)
		}
	})
}

// TestDuplicateKeysRejectTheObject: a mapping that sets a key twice would
// silently keep the last value; the object is rejected with the file,
// document, line and key, and the other documents still parse.
func TestDuplicateKeysRejectTheObject(t *testing.T) {
	data := gatewayDoc + `---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: twice
  namespace: edge
spec:
  hosts: [a.example.com]
  hosts: [b.example.com]
  http:
  - route:
    - destination: {host: reviews, port: {number: 80}, port: {number: 81}}
`
	objs, errs := manifest.Parse("f.yaml", []byte(data), manifest.Options{})
	if len(objs) != 1 || objs[0].Name != "public" {
		t.Fatalf("objects = %v, want only the gateway", objs)
	}
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one", errs)
	}
	e := errs[0]
	want := `f.yaml (document 2): VirtualService edge/twice: duplicate key in a mapping (the object is rejected): key "hosts" at line 24, key "port" at line 27`
	if e.Error() != want {
		t.Fatalf("error = %q\nwant    %q", e.Error(), want)
	}
	if lines := strings.Split(data, "\n"); strings.TrimSpace(lines[23]) != "hosts: [b.example.com]" {
		t.Fatalf("line 24 of the input is %q; the test's line numbers are off", lines[23])
	}
}
