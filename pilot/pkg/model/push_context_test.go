package model

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// listStore is the smallest ConfigStore: enough to index a push context.
type listStore []config.Config

func (s listStore) Get(k schema.Kind, ns, name string) *config.Config {
	for i := range s {
		if s[i].Kind == k && s[i].Namespace == ns && s[i].Name == name {
			return &s[i]
		}
	}
	return nil
}

func (s listStore) List(k schema.Kind, ns string) []config.Config {
	var out []config.Config
	for _, c := range s {
		if c.Kind == k && (ns == "" || c.Namespace == ns) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b config.Config) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

func parseStore(t *testing.T, yaml string) listStore {
	t.Helper()
	cs, errs := manifest.Parse("test.yaml", []byte(yaml), manifest.Options{})
	if len(errs) > 0 {
		t.Fatalf("parse: %v", errs)
	}
	return cs
}

const pushInput = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1beta1
kind: Gateway
metadata: {name: internal, namespace: edge}
spec:
  selector: {istio: internal}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {name: b, namespace: default, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  hosts: [b.example.com]
  gateways: [istio-system/public, mesh]
  http: [{route: [{destination: {host: b.default.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a, namespace: edge, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  hosts: [a.example.com]
  gateways: [internal]
  http: [{route: [{destination: {host: a.default.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: c, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  hosts: [c.example.com]
  gateways: [istio-system/public]
  http: [{route: [{destination: {host: b.default.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: shared, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  hosts: [b.default.svc.cluster.local, a.default.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: http, targetPort: 9090}]
  endpoints:
  - {address: 10.0.0.1, labels: {version: v1}}
  - {address: 10.0.0.2, ports: {http: 7070}, labels: {version: v2}, weight: 3}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dup, namespace: other, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  hosts: [b.default.svc.cluster.local]
  resolution: DNS
  ports: [{number: 80, name: http, protocol: HTTP}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b, namespace: default}
spec:
  host: b.default.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: wild, namespace: default}
spec:
  host: "*.default.svc.cluster.local"
  subsets: [{name: any, labels: {app: x}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: all, namespace: default}
spec:
  host: "*"
`

// lostVS is a VirtualService bound to a Gateway that does not exist.
const lostVS = `---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: lost, namespace: default}
spec:
  hosts: [lost.example.com]
  gateways: [nowhere]
  http: [{route: [{destination: {host: b.default.svc.cluster.local}}]}]
`

func names(cs []config.Config) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Namespace+"/"+c.Name)
	}
	return out
}

func TestPushContextIndexes(t *testing.T) {
	ps := NewPushContext(parseStore(t, pushInput))

	if got := names(ps.VirtualServicesForGateway("istio-system/public")); !slices.Equal(got, []string{"default/c", "default/b"}) {
		t.Errorf("VS for public gateway, oldest first: %v", got)
	}
	if got := names(ps.VirtualServicesForGateway("edge/internal")); !slices.Equal(got, []string{"edge/a"}) {
		t.Errorf("short gateway name resolves in the VS namespace: %v", got)
	}
	if got := ps.VirtualServicesForGateway("mesh"); len(got) != 0 {
		t.Errorf("mesh is not a gateway: %v", got)
	}

	svc := ps.ServiceForHost("b.default.svc.cluster.local")
	if svc == nil || svc.Source.Name != "shared" || svc.Resolution != ClientSideLB || len(svc.Endpoints) != 2 {
		t.Fatalf("first ServiceEntry by creation wins: %+v", svc)
	}
	port, ok := svc.Port(8080)
	if !ok || port.Protocol != "HTTP" {
		t.Fatalf("port 8080: %+v %v", port, ok)
	}
	if got := svc.Endpoints[0].PortFor(port); got != 9090 {
		t.Errorf("targetPort default: %d", got)
	}
	if got := svc.Endpoints[1].PortFor(port); got != 7070 {
		t.Errorf("endpoint port override: %d", got)
	}
	if len(ps.Errors) != 1 || !ps.Errors[0].Warning || ps.Errors[0].Key.Name != "dup" || !strings.Contains(ps.Errors[0].Message, "already defined by ServiceEntry default/shared") {
		t.Errorf("duplicate host reported once, naming both: %v", ps.Errors)
	}
	if got := len(ps.Services()); got != 2 || ps.Services()[0].Hostname != "a.default.svc.cluster.local" {
		t.Errorf("services sorted by host: %d", got)
	}

	if dr := ps.DestinationRuleForHost("b.default.svc.cluster.local"); dr == nil || dr.Name != "b" {
		t.Errorf("exact DR: %v", dr)
	}
	if dr := ps.DestinationRuleForHost("a.default.svc.cluster.local"); dr == nil || dr.Name != "wild" {
		t.Errorf("most specific wildcard DR: %v", dr)
	}
	// As in istiod, a host without a service has no DestinationRule.
	if dr := ps.DestinationRuleForHost("example.org"); dr != nil {
		t.Errorf("DR for a host without a service: %v", dr)
	}
	if s := ps.Subset("b.default.svc.cluster.local", "v1"); s == nil || s.GetLabels()["version"] != "v1" {
		t.Errorf("subset v1: %v", s)
	}
	if s := ps.Subset("b.default.svc.cluster.local", "v9"); s != nil {
		t.Errorf("unknown subset: %v", s)
	}
}

func TestGatewaysForProxyAndGroupKey(t *testing.T) {
	ps := NewPushContext(parseStore(t, pushInput))
	public := &Proxy{Labels: map[string]string{"istio": "ingressgateway", "pod": "1"}}
	public2 := &Proxy{Labels: map[string]string{"istio": "ingressgateway", "pod": "2"}}
	internal := &Proxy{Labels: map[string]string{"istio": "internal"}}
	none := &Proxy{}

	if got := names(ps.GatewaysForProxy(public)); !slices.Equal(got, []string{"istio-system/public"}) {
		t.Errorf("public: %v", got)
	}
	k1, k2 := GatewayGroupKey(ps.GatewaysForProxy(public)), GatewayGroupKey(ps.GatewaysForProxy(public2))
	if k1 == "" || k1 != k2 {
		t.Errorf("proxies selected by the same gateways share a group: %q %q", k1, k2)
	}
	if k3 := GatewayGroupKey(ps.GatewaysForProxy(internal)); k3 == k1 || k3 == "" {
		t.Errorf("different gateways, different group: %q", k3)
	}
	if k := GatewayGroupKey(ps.GatewaysForProxy(none)); k != "" {
		t.Errorf("no gateways: %q", k)
	}
}

func TestPushRequestMerge(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := &PushRequest{ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.Gateway, Name: "a"}: {}}, Reasons: map[string]int{"config": 1}, Start: t0.Add(time.Second)}
	b := &PushRequest{Full: true, ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.Gateway, Name: "b"}: {}}, Reasons: map[string]int{"config": 2, "endpoint": 1}, Start: t0}
	m := a.Merge(b)
	if !m.Full || len(m.ConfigsUpdated) != 2 || m.Reasons["config"] != 3 || m.Reasons["endpoint"] != 1 || !m.Start.Equal(t0) {
		t.Errorf("merged %+v", m)
	}
	if a.Full || len(a.ConfigsUpdated) != 1 || a.Reasons["config"] != 1 {
		t.Errorf("merge modified its input: %+v", a)
	}
	if (*PushRequest)(nil).Merge(b) != b || a.Merge(nil) != a {
		t.Error("merge with nil returns the other")
	}
	if got := m.ReasonList(); !slices.Equal(got, []string{"config", "endpoint"}) {
		t.Errorf("reasons %v", got)
	}
}

func TestClusterName(t *testing.T) {
	n := ClusterName(8080, "v1", "reviews.default.svc.cluster.local")
	if n != "outbound|8080|v1|reviews.default.svc.cluster.local" {
		t.Fatal(n)
	}
	port, subset, host, err := ParseClusterName(n)
	if err != nil || port != 8080 || subset != "v1" || host != "reviews.default.svc.cluster.local" {
		t.Errorf("round trip: %d %q %q %v", port, subset, host, err)
	}
	if _, _, _, err := ParseClusterName("inbound|80||x"); err == nil {
		t.Error("inbound name: want error")
	}
}

type fixedRegistry []*Service

func (r fixedRegistry) Services() []*Service { return r }

func TestRegistryServicesWinOverServiceEntries(t *testing.T) {
	kube := &Service{Hostname: "b.default.svc.cluster.local", Namespace: "default",
		Ports: []Port{{Name: "http", Number: 80, Protocol: "HTTP"}}, Source: config.Key{Name: "b", Namespace: "default"}}
	ps := NewPushContext(parseStore(t, pushInput), fixedRegistry{kube})
	if got := ps.ServiceForHost("b.default.svc.cluster.local"); got != kube {
		t.Errorf("registry service should win, got %+v", got)
	}
	if got := ps.ServiceForHost("a.default.svc.cluster.local"); got == nil || got.Source.Name != "shared" {
		t.Errorf("other ServiceEntry hosts still served: %+v", got)
	}
	var clash int
	for _, e := range ps.Errors {
		if e.Key.Kind == schema.ServiceEntry && strings.Contains(e.Message, "b.default.svc.cluster.local") {
			clash++
		}
	}
	if clash != 2 {
		t.Errorf("both ServiceEntries claiming the Service's host are reported: %v", ps.Errors)
	}
}

// WithServices indexes the services as NewPushContext does, from the
// registries and ServiceEntries as they are now, and keeps the Gateways,
// VirtualServices and DestinationRules it was made from, with their
// problems.
func TestWithServicesKeepsRoutingConfig(t *testing.T) {
	store := parseStore(t, pushInput+lostVS)
	kube := &Service{Hostname: "b.default.svc.cluster.local", Namespace: "default", Source: config.Key{Name: "b", Namespace: "default"}}
	before := NewPushContext(store, fixedRegistry{kube})

	// Same store, a registry service with new endpoints: what a new
	// push context would be.
	moved := &Service{Hostname: kube.Hostname, Namespace: "default", Source: kube.Source, Endpoints: []*Endpoint{{Address: "10.9.9.9"}}}
	got, want := before.WithServices(store, fixedRegistry{moved}), NewPushContext(store, fixedRegistry{moved})
	hosts := func(ss []*Service) (out []string) {
		for _, s := range ss {
			out = append(out, s.Hostname+" from "+s.Source.String())
		}
		return out
	}
	if got.ServiceForHost(kube.Hostname) != moved || !slices.Equal(hosts(got.Services()), hosts(want.Services())) {
		t.Errorf("services = %v, want %v", hosts(got.Services()), hosts(want.Services()))
	}
	if !slices.EqualFunc(got.Errors, want.Errors, func(a, b *config.Error) bool { return *a == *b }) {
		t.Errorf("errors = %v, want %v", got.Errors, want.Errors)
	}
	if before.ServiceForHost(kube.Hostname) != kube {
		t.Error("WithServices changed the push context it was made from")
	}

	// The store loses its DestinationRules, VirtualServices and the
	// clashing ServiceEntry: the services follow it, routing does not.
	var trimmed listStore
	for _, c := range store {
		if c.Kind == schema.DestinationRule || c.Kind == schema.VirtualService || c.Name == "dup" {
			continue
		}
		trimmed = append(trimmed, c)
	}
	got = before.WithServices(trimmed, fixedRegistry{moved})
	if len(got.DestinationRules()) != len(before.DestinationRules()) || len(got.VirtualServices()) != len(before.VirtualServices()) ||
		got.DestinationRuleForHost(kube.Hostname) == nil {
		t.Errorf("routing config changed: %d DestinationRules, %d VirtualServices", len(got.DestinationRules()), len(got.VirtualServices()))
	}
	var clashes, missing int
	for _, e := range got.Errors {
		if strings.Contains(e.Message, "is already defined by") {
			clashes++
		}
		if strings.Contains(e.Message, "does not exist") || strings.Contains(e.Message, "already has") {
			missing++
		}
	}
	if clashes != 1 {
		t.Errorf("service clashes = %d, want 1 (the dup ServiceEntry is gone): %v", clashes, got.Errors)
	}
	if want := len(before.Errors) - before.serviceErrors; want != 1 || missing != want {
		t.Errorf("routing problems = %d, want the %d found before (1, the missing Gateway)", missing, want)
	}
}

// After changes to Gateways and VirtualServices alone, WithRouting gives
// what a new push context would, problems included, and leaves the push
// context it was made from as it was.
func TestWithRoutingIsANewPushContext(t *testing.T) {
	dupDR := `---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b2, namespace: default, creationTimestamp: "2026-03-01T00:00:00Z"}
spec:
  host: b.default.svc.cluster.local
  subsets: [{name: v1, labels: {version: x}}]
`
	store := parseStore(t, pushInput+dupDR+lostVS)
	kube := fixedRegistry{&Service{Hostname: "k.default.svc.cluster.local", Namespace: "default", Source: config.Key{Name: "k", Namespace: "default"}}}
	before := NewPushContext(store, kube)
	beforeErrors := slices.Clone(before.Errors)
	beforeVS := names(before.VirtualServicesForGateway("istio-system/public"))

	// One VirtualService changed (to a Gateway that does not exist), one
	// added, one removed (with the problem it had), the edge Gateway
	// removed (its VirtualService now dangles).
	if before.routingErrors != 1 {
		t.Fatalf("the store has %d routing problems, want 1 (lost's Gateway): %v", before.routingErrors, before.Errors)
	}
	var changed listStore
	for _, c := range store {
		switch {
		case c.Kind == schema.Gateway && c.Name == "internal", c.Kind == schema.VirtualService && c.Name == "lost":
			continue
		case c.Kind == schema.VirtualService && c.Name == "c":
			c = parseStore(t, `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: c, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  hosts: [c.example.com]
  gateways: [nowhere]
  http: [{route: [{destination: {host: b.default.svc.cluster.local}}]}]
`)[0]
		}
		changed = append(changed, c)
	}
	changed = append(changed, parseStore(t, `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: d, namespace: default, creationTimestamp: "2026-01-05T00:00:00Z"}
spec:
  hosts: [d.example.com]
  gateways: [istio-system/public]
  http: [{route: [{destination: {host: k.default.svc.cluster.local}}]}]
`)...)

	got, want := before.WithRouting(changed), NewPushContext(changed, kube)
	// It holds its source's services: their epoch is its source's.
	if got.ServicesEpoch() != before.ServicesEpoch() || want.ServicesEpoch() == before.ServicesEpoch() {
		t.Errorf("services epochs: WithRouting %d, its source %d, a new push context %d; want the first two equal and the third not",
			got.ServicesEpoch(), before.ServicesEpoch(), want.ServicesEpoch())
	}
	want.servicesEpoch = got.servicesEpoch
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithRouting differs from a new push context:\n got %+v\nwant %+v", got, want)
	}
	if n := len(want.Errors) - want.serviceErrors; n != 3 {
		// b2's host, c's and a's Gateways: the test must exercise all three.
		t.Fatalf("the changed store has %d DestinationRule and routing problems, want 3: %v", n, want.Errors)
	}
	if !slices.EqualFunc(before.Errors, beforeErrors, func(a, b *config.Error) bool { return a == b }) ||
		!slices.Equal(names(before.VirtualServicesForGateway("istio-system/public")), beforeVS) || len(before.Gateways()) != 2 {
		t.Error("WithRouting changed the push context it was made from")
	}
	// And WithServices after it keeps the routing problems it found.
	again := got.WithServices(changed, kube)
	if !reflect.DeepEqual(again.Errors, want.Errors) {
		t.Errorf("WithServices after WithRouting: errors = %v, want %v", again.Errors, want.Errors)
	}
	if again.ServicesEpoch() == got.ServicesEpoch() {
		t.Error("WithServices kept the services epoch of the push context it indexed anew")
	}
}

// WithEndpoints, for registry services whose endpoints alone changed, gives
// what WithServices gives (the same services, index and problems, a new
// epoch) without indexing everything again; for a service that changed
// more (another host), it indexes everything.
func TestWithEndpointsIsWithServices(t *testing.T) {
	store := parseStore(t, pushInput)
	svc := func(name, host, addr string) *Service {
		return &Service{Hostname: host, Namespace: "default", Ports: []Port{{Name: "http", Number: 80, Protocol: "HTTP"}},
			Source: config.Key{Name: name, Namespace: "default"}, Endpoints: []*Endpoint{{Address: addr}}}
	}
	b, c := svc("b", "b.default.svc.cluster.local", "10.0.0.1"), svc("c", "c.default.svc.cluster.local", "10.0.0.2")
	before := NewPushContext(store, fixedRegistry{b, c})
	hosts := func(ps *PushContext) (out []string) {
		for _, s := range ps.Services() {
			out = append(out, s.Hostname+" from "+s.Source.String()+" at "+s.Endpoints[0].Address)
		}
		return out
	}
	cases := []struct {
		name   string
		now    []*Service
		copied bool // the index is ps's copied, not built again
	}{
		{"new endpoints", []*Service{svc("b", b.Hostname, "10.9.9.9"), c}, true},
		{"another host", []*Service{svc("b", "b2.default.svc.cluster.local", "10.9.9.9"), c}, false},
	}
	for _, tc := range cases {
		changed := map[config.Key]struct{}{b.Source: {}}
		got := before.WithEndpoints(store, changed, fixedRegistry(tc.now))
		want := before.WithServices(store, fixedRegistry(tc.now))
		if !slices.Equal(hosts(got), hosts(want)) {
			t.Errorf("%s: services = %v, want %v", tc.name, hosts(got), hosts(want))
		}
		for _, s := range tc.now {
			if got.ServiceForHost(s.Hostname) != s {
				t.Errorf("%s: host %s is not indexed to the registry's service", tc.name, s.Hostname)
			}
		}
		if !slices.EqualFunc(got.Errors, want.Errors, func(a, b *config.Error) bool { return *a == *b }) {
			t.Errorf("%s: errors = %v, want %v", tc.name, got.Errors, want.Errors)
		}
		if got.ServicesEpoch() == before.ServicesEpoch() {
			t.Errorf("%s: the services epoch was kept", tc.name)
		}
		// A copied index keeps every ServiceEntry's service object; one
		// built again converts every ServiceEntry anew.
		a := "a.default.svc.cluster.local"
		if copied := got.ServiceForHost(a) == before.ServiceForHost(a); copied != tc.copied {
			t.Errorf("%s: index copied = %v, want %v", tc.name, copied, tc.copied)
		}
		if before.ServiceForHost(b.Hostname) != b {
			t.Errorf("%s: the push context it was made from changed", tc.name)
		}
	}
}

func TestResolveShortname(t *testing.T) {
	cases := map[string]string{
		"reviews":                           "reviews.prod.svc.cluster.local",
		"Reviews":                           "reviews.prod.svc.cluster.local",
		"reviews.other":                     "reviews.other",
		"reviews.default.svc.cluster.local": "reviews.default.svc.cluster.local",
		"*":                                 "*",
		"*.example.com":                     "*.example.com",
		"10.1.2.3":                          "10.1.2.3",
		"::1":                               "::1",
		"":                                  "",
	}
	for in, want := range cases {
		if got := ResolveShortname(in, "prod", DefaultDomainSuffix); got != want {
			t.Errorf("ResolveShortname(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := ResolveShortname("reviews", "prod", "example.internal"), "reviews.prod.svc.example.internal"; got != want {
		t.Errorf("with suffix example.internal: got %q, want %q", got, want)
	}
}

// TestPushContextDomainSuffix checks that the push context completes short
// names, its own and the translators' (ResolveShortname), with the suffix
// it was made with, and that copies made for later pushes keep it.
func TestPushContextDomainSuffix(t *testing.T) {
	if got := NewPushContext(listStore{}).ResolveShortname("reviews", "prod"); got != "reviews.prod.svc.cluster.local" {
		t.Errorf("default suffix: got %q", got)
	}
	rule, errs := manifest.Parse("dr.yaml", []byte(`
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: prod}
spec:
  host: reviews
  subsets: [{name: v1, labels: {version: v1}}]
`), manifest.Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	store := listStore(rule)
	reg := staticRegistry{{Hostname: "reviews.prod.svc.example.internal", Namespace: "prod", Ports: []Port{{Number: 80, Protocol: "HTTP"}}}}
	ps := NewScopedPushContext(Scoping{DomainSuffix: "example.internal"}, store, reg)
	for name, p := range map[string]*PushContext{"new": ps, "WithRouting": ps.WithRouting(store), "WithServices": ps.WithServices(store, reg), "ForProxy": ps.ForProxy(&Proxy{Namespace: "other"})} {
		if got := p.ResolveShortname("reviews", "prod"); got != "reviews.prod.svc.example.internal" {
			t.Errorf("%s: ResolveShortname = %q", name, got)
		}
		if p.Subset("reviews.prod.svc.example.internal", "v1") == nil {
			t.Errorf("%s: the DestinationRule for short host reviews does not govern reviews.prod.svc.example.internal", name)
		}
	}
}
