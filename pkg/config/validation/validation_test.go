package validation_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// testCase is one rule exercised on an otherwise valid object: mutate
// breaks (or legitimately varies) the base object, want lists the exact
// fields reported, in order (nil: valid), and msg is a fragment of the
// first message, showing the intended rule fired.
type testCase[T any] struct {
	name   string
	mutate func(*T)
	want   []string
	msg    string
}

// runCases validates base() mutated by each case, as an object of kind.
func runCases[T any, P interface {
	*T
	proto.Message
}](t *testing.T, kind schema.Kind, base func() P, cases []testCase[T]) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			spec := base()
			if tc.mutate != nil {
				tc.mutate(spec)
			}
			c := config.Config{Meta: config.Meta{Kind: kind, Name: "test", Namespace: "default"}, Spec: spec}
			checkErrors(t, validation.Validate(c), tc.want, tc.msg)
		})
	}
}

// checkErrors asserts err reports exactly the fields want, each with a
// message, and that the first message contains msg.
func checkErrors(t *testing.T, err error, want []string, msg string) {
	t.Helper()
	got := fieldErrors(t, err)
	var fields []string
	for _, fe := range got {
		fields = append(fields, fe.Field)
		if strings.TrimSpace(fe.Message) == "" {
			t.Errorf("error for %s has no message", fe.Field)
		}
	}
	if !reflect.DeepEqual(fields, want) {
		t.Fatalf("fields = %q, want %q\nerrors:\n%v", fields, want, err)
	}
	if msg != "" && !strings.Contains(got[0].Message, msg) {
		t.Errorf("message %q does not mention %q", got[0].Message, msg)
	}
	if len(want) > 0 && msg == "" {
		t.Errorf("invalid case without an expected message fragment; got %q", got[0].Message)
	}
}

// fieldErrors unpacks Validate's result, checking its shape: nil, or a
// join of *config.FieldError only.
func fieldErrors(t *testing.T, err error) []*config.FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate returned %T, want an errors.Join result", err)
	}
	var out []*config.FieldError
	for _, e := range joined.Unwrap() {
		fe, ok := e.(*config.FieldError)
		if !ok {
			t.Fatalf("Validate joined a %T (%v), want *config.FieldError", e, e)
		}
		out = append(out, fe)
	}
	if len(out) == 0 {
		t.Fatalf("Validate returned an empty join")
	}
	return out
}

func exact(s string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: s}}
}

func prefix(s string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: s}}
}

func regex(s string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: s}}
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func TestMetadata(t *testing.T) {
	gw := func() proto.Message { return baseGateway() }
	vs := func() proto.Message { return baseVirtualService() }
	cases := []struct {
		name      string
		kind      schema.Kind
		spec      func() proto.Message
		objName   string
		namespace string
		labels    map[string]string
		want      []string
		msg       string
	}{
		{name: "valid", kind: schema.VirtualService, spec: vs, objName: "reviews", namespace: "default"},
		{name: "dotted name on a VirtualService", kind: schema.VirtualService, spec: vs, objName: "reviews.v1", namespace: "default"},
		{name: "empty namespace is left to the source", kind: schema.VirtualService, spec: vs, objName: "reviews"},
		{name: "valid labels", kind: schema.VirtualService, spec: vs, objName: "reviews", namespace: "default",
			labels: map[string]string{"app.kubernetes.io/name": "reviews", "empty": ""}},
		{name: "missing name", kind: schema.VirtualService, spec: vs, namespace: "default",
			want: []string{"metadata.name"}, msg: "required"},
		{name: "upper-case name", kind: schema.VirtualService, spec: vs, objName: "Reviews", namespace: "default",
			want: []string{"metadata.name"}, msg: "DNS-1123 subdomain"},
		{name: "name too long", kind: schema.VirtualService, spec: vs, objName: strings.Repeat("a", 254), namespace: "default",
			want: []string{"metadata.name"}, msg: "DNS-1123 subdomain"},
		{name: "dotted name on a Gateway", kind: schema.Gateway, spec: gw, objName: "public.gw", namespace: "default",
			want: []string{"metadata.name"}, msg: "DNS-1123 label"},
		{name: "bad namespace", kind: schema.VirtualService, spec: vs, objName: "reviews", namespace: "my_ns",
			want: []string{"metadata.namespace"}, msg: "DNS-1123 label"},
		{name: "bad label key", kind: schema.VirtualService, spec: vs, objName: "reviews", namespace: "default",
			labels: map[string]string{"-app": "x"}, want: []string{`metadata.labels["-app"]`}, msg: "label key"},
		{name: "bad label value", kind: schema.VirtualService, spec: vs, objName: "reviews", namespace: "default",
			labels: map[string]string{"app": "a b"}, want: []string{`metadata.labels["app"]`}, msg: "label value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Config{
				Meta: config.Meta{Kind: tc.kind, Name: tc.objName, Namespace: tc.namespace, Labels: tc.labels},
				Spec: tc.spec(),
			}
			checkErrors(t, validation.Validate(c), tc.want, tc.msg)
		})
	}
}

func TestKindAndSpec(t *testing.T) {
	meta := func(k schema.Kind) config.Meta { return config.Meta{Kind: k, Name: "x", Namespace: "default"} }
	cases := []struct {
		name string
		c    config.Config
		want []string
		msg  string
	}{
		{name: "unknown kind", c: config.Config{Meta: meta(0), Spec: baseGateway()},
			want: []string{"kind"}, msg: "unknown kind"},
		{name: "nil spec", c: config.Config{Meta: meta(schema.Gateway)},
			want: []string{"spec"}, msg: "required"},
		{name: "spec of another kind", c: config.Config{Meta: meta(schema.Gateway), Spec: baseVirtualService()},
			want: []string{"spec"}, msg: "VirtualService"},
		// A typed nil spec is an empty spec, which lacks required fields.
		{name: "typed nil Gateway", c: config.Config{Meta: meta(schema.Gateway), Spec: (*networking.Gateway)(nil)},
			want: []string{"spec.servers"}, msg: "at least one server"},
		{name: "typed nil VirtualService", c: config.Config{Meta: meta(schema.VirtualService), Spec: (*networking.VirtualService)(nil)},
			want: []string{"spec.http"}, msg: "at least one"},
		{name: "typed nil DestinationRule", c: config.Config{Meta: meta(schema.DestinationRule), Spec: (*networking.DestinationRule)(nil)},
			want: []string{"spec.host"}, msg: "required"},
		{name: "typed nil ServiceEntry", c: config.Config{Meta: meta(schema.ServiceEntry), Spec: (*networking.ServiceEntry)(nil)},
			want: []string{"spec.hosts", "spec.ports"}, msg: "at least one host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, validation.Validate(tc.c), tc.want, tc.msg)
		})
	}
}

// TestAllProblemsReported checks one object with many problems reports
// each of them, in document order, and that config.ErrorsFor turns them
// into one located error apiece.
func TestAllProblemsReported(t *testing.T) {
	gw := baseGateway()
	gw.Servers[0].Port.Number = 0
	gw.Servers[0].Port.Protocol = "SPDY"
	gw.Servers[0].Hosts = []string{"example", "*.example.com"}
	gw.Servers[1].Port.Name = "http"
	gw.Servers[1].Tls = nil
	c := config.Config{Meta: config.Meta{Kind: schema.Gateway, Name: "Public", Namespace: "default"}, Spec: gw}
	err := validation.Validate(c)
	want := []string{
		"metadata.name",
		"spec.servers[0].port.number",
		"spec.servers[0].port.protocol",
		"spec.servers[0].hosts[0]",
		"spec.servers[1].tls",
		"spec.servers[1].port.name",
	}
	checkErrors(t, err, want, "Gateway name")

	located := config.ErrorsFor("gw.yaml (document 1)", c.Key(), err)
	if len(located) != len(want) {
		t.Fatalf("ErrorsFor gave %d errors, want %d", len(located), len(want))
	}
	for i, e := range located {
		if e.Field != want[i] || e.Source != "gw.yaml (document 1)" || e.Key != c.Key() || e.Message == "" {
			t.Errorf("located error %d = %+v", i, e)
		}
	}

	vs := baseVirtualService()
	vs.Hosts = append(vs.Hosts, "example.com")
	r := vs.Http[0]
	r.Route = append(r.Route, &networking.HTTPRouteDestination{
		Destination: &networking.Destination{Host: "ratings", Subset: "V2"}, Weight: 120,
	})
	r.Match[0].Uri = regex("(")
	r.Retries = &networking.HTTPRetry{Attempts: -1}
	r.Timeout = dur(-time.Second)
	checkErrors(t, validation.Validate(config.Config{
		Meta: config.Meta{Kind: schema.VirtualService, Name: "vs", Namespace: "default"}, Spec: vs,
	}), []string{
		"spec.hosts[1]",
		"spec.http[0].match[0].uri.regex",
		"spec.http[0].route[1].destination.subset",
		"spec.http[0].route[1].weight",
		"spec.http[0].timeout",
		"spec.http[0].retries.attempts",
	}, "duplicates")
}

// TestDeterministic checks that map-valued fields are reported in key
// order, so repeated runs print the same errors.
func TestDeterministic(t *testing.T) {
	gw := baseGateway()
	gw.Selector = map[string]string{}
	for _, k := range []string{"z*", "a*", "m*", "c*", "x*", "b*"} {
		gw.Selector[k] = "v"
	}
	c := config.Config{Meta: config.Meta{Kind: schema.Gateway, Name: "gw", Namespace: "default"}, Spec: gw}
	first := validation.Validate(c).Error()
	for range 20 {
		if got := validation.Validate(c).Error(); got != first {
			t.Fatalf("output changed between runs:\n%s\n---\n%s", first, got)
		}
	}
	checkErrors(t, validation.Validate(c), []string{
		`spec.selector["a*"]`, `spec.selector["b*"]`, `spec.selector["c*"]`,
		`spec.selector["m*"]`, `spec.selector["x*"]`, `spec.selector["z*"]`,
	}, "wildcard")
}

// TestFieldErrorsAreDistinct guards the errors.Join contract: callers may
// unwrap with errors.As.
func TestFieldErrorsAreDistinct(t *testing.T) {
	err := validation.Validate(config.Config{Meta: config.Meta{Kind: schema.Gateway, Name: "gw"}, Spec: &networking.Gateway{}})
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Field != "spec.servers" {
		t.Fatalf("errors.As found %v in %v", fe, err)
	}
}
