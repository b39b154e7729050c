package policy

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

const rule = `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r, namespace: default}
spec:
  host: svc.example.com
  trafficPolicy:
    loadBalancer: {simple: RANDOM}
    connectionPool: {tcp: {maxConnections: 10}}
    outlierDetection: {consecutive5xxErrors: 3}
    tls: {mode: SIMPLE}
    portLevelSettings:
    - port: {number: 8080}
      loadBalancer: {simple: ROUND_ROBIN}
  subsets:
  - name: a
    labels: {v: a}
    trafficPolicy:
      loadBalancer: {simple: LEAST_REQUEST}
  - name: b
    labels: {v: b}
    trafficPolicy:
      connectionPool: {tcp: {maxConnections: 5}}
      portLevelSettings:
      - port: {number: 80}
        tls: {mode: DISABLE}
  - name: c
    labels: {v: c}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: wild, namespace: default}
spec:
  host: "*.wild.example.com"
  trafficPolicy:
    loadBalancer: {simple: RANDOM}
---
# A rule applies to a service (of its namespace, here): istiod looks rules
# up by service.
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: services, namespace: default}
spec:
  hosts: [svc.example.com, a.wild.example.com, other.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}, {number: 8080, name: http-alt, protocol: HTTP}, {number: 9090, name: http-admin, protocol: HTTP}]
  resolution: DNS
`

func push(t *testing.T) *model.PushContext {
	t.Helper()
	cfgs, errs := manifest.Parse("rule.yaml", []byte(rule), manifest.Options{})
	if len(errs) > 0 {
		t.Fatalf("parse: %v", errs)
	}
	return model.NewPushContext(memory.New(cfgs))
}

func TestTopLevelPolicy(t *testing.T) {
	p := For(push(t), "svc.example.com", 80, "")
	if p.Rule == nil || p.Rule.Name != "r" {
		t.Fatalf("Rule = %v, want default/r", p.Rule)
	}
	if got := p.LoadBalancer.GetSimple(); got != networking.LoadBalancerSettings_RANDOM {
		t.Errorf("loadBalancer = %v, want RANDOM", got)
	}
	if p.LoadBalancerField != "spec.trafficPolicy.loadBalancer" {
		t.Errorf("LoadBalancerField = %q", p.LoadBalancerField)
	}
	if p.ConnectionPool.GetTcp().GetMaxConnections() != 10 || p.OutlierDetection == nil || p.TLS.GetMode() != networking.ClientTLSSettings_SIMPLE {
		t.Errorf("top-level components not all applied: %+v", p)
	}
}

func TestPortLevelReplacesEverything(t *testing.T) {
	p := For(push(t), "svc.example.com", 8080, "")
	if got := p.LoadBalancer.GetSimple(); got != networking.LoadBalancerSettings_ROUND_ROBIN {
		t.Errorf("loadBalancer = %v, want ROUND_ROBIN", got)
	}
	if p.ConnectionPool != nil || p.OutlierDetection != nil || p.TLS != nil {
		t.Errorf("port-level settings must not inherit the top level: pool %v outlier %v tls %v", p.ConnectionPool, p.OutlierDetection, p.TLS)
	}
	if p.LoadBalancerField != "spec.trafficPolicy.portLevelSettings[0].loadBalancer" || p.TLSField != "spec.trafficPolicy.portLevelSettings[0].tls" {
		t.Errorf("fields = %q, %q", p.LoadBalancerField, p.TLSField)
	}
}

func TestSubsetOverridesPerComponent(t *testing.T) {
	ps := push(t)
	a := For(ps, "svc.example.com", 80, "a")
	if got := a.LoadBalancer.GetSimple(); got != networking.LoadBalancerSettings_LEAST_REQUEST {
		t.Errorf("subset a loadBalancer = %v, want LEAST_REQUEST", got)
	}
	if a.LoadBalancerField != "spec.subsets[0].trafficPolicy.loadBalancer" {
		t.Errorf("subset a LoadBalancerField = %q", a.LoadBalancerField)
	}
	if a.ConnectionPool.GetTcp().GetMaxConnections() != 10 || a.ConnectionPoolField != "spec.trafficPolicy.connectionPool" {
		t.Errorf("subset a must inherit the top-level pool, got %v at %q", a.ConnectionPool, a.ConnectionPoolField)
	}

	// Subset b on port 80: its port-level entry replaces all components.
	b80 := For(ps, "svc.example.com", 80, "b")
	if b80.TLS.GetMode() != networking.ClientTLSSettings_DISABLE || b80.LoadBalancer != nil || b80.ConnectionPool != nil {
		t.Errorf("subset b port 80: tls %v lb %v pool %v; want only DISABLE tls", b80.TLS, b80.LoadBalancer, b80.ConnectionPool)
	}
	if b80.TLSField != "spec.subsets[1].trafficPolicy.portLevelSettings[0].tls" {
		t.Errorf("subset b TLSField = %q", b80.TLSField)
	}
	// On port 9090 subset b's own pool applies over the top level.
	b9090 := For(ps, "svc.example.com", 9090, "b")
	if b9090.ConnectionPool.GetTcp().GetMaxConnections() != 5 || b9090.LoadBalancer.GetSimple() != networking.LoadBalancerSettings_RANDOM {
		t.Errorf("subset b port 9090: pool %v lb %v", b9090.ConnectionPool, b9090.LoadBalancer)
	}
	// On port 8080 the top-level port settings come first, then subset b's pool.
	b8080 := For(ps, "svc.example.com", 8080, "b")
	if b8080.LoadBalancer.GetSimple() != networking.LoadBalancerSettings_ROUND_ROBIN || b8080.ConnectionPool.GetTcp().GetMaxConnections() != 5 || b8080.TLS != nil {
		t.Errorf("subset b port 8080: lb %v pool %v tls %v", b8080.LoadBalancer, b8080.ConnectionPool, b8080.TLS)
	}
}

func TestSubsetWithoutPolicyAndUnknownSubset(t *testing.T) {
	ps := push(t)
	top := For(ps, "svc.example.com", 80, "")
	for _, subset := range []string{"c", "missing"} {
		p := For(ps, "svc.example.com", 80, subset)
		if p.LoadBalancer != top.LoadBalancer || p.ConnectionPool != top.ConnectionPool || p.TLS != top.TLS {
			t.Errorf("subset %q should have the top-level policy", subset)
		}
	}
}

func TestNoRuleAndWildcardRule(t *testing.T) {
	ps := push(t)
	if p := For(ps, "other.example.com", 80, ""); p.Rule != nil || p.LoadBalancer != nil {
		t.Errorf("host without a rule got %+v", p)
	}
	p := For(ps, "a.wild.example.com", 80, "")
	if p.Rule == nil || p.Rule.Name != "wild" || p.LoadBalancer.GetSimple() != networking.LoadBalancerSettings_RANDOM {
		t.Errorf("wildcard rule not applied: %+v", p)
	}
	if got := len(Subsets(ps, "svc.example.com")); got != 3 {
		t.Errorf("Subsets = %d, want 3", got)
	}
	if Subsets(ps, "other.example.com") != nil {
		t.Error("Subsets of a host without a rule should be nil")
	}
}

func TestIsEDS(t *testing.T) {
	passthrough := &Policy{LoadBalancer: &networking.LoadBalancerSettings{
		LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_PASSTHROUGH}}}
	cases := []struct {
		res  model.Resolution
		pol  *Policy
		want bool
	}{
		{model.ClientSideLB, &Policy{}, true},
		{model.ClientSideLB, passthrough, false},
		{model.DNSLB, &Policy{}, false},
		{model.DNSRoundRobinLB, &Policy{}, false},
		{model.Passthrough, &Policy{}, false},
	}
	for _, c := range cases {
		if got := IsEDS(&model.Service{Resolution: c.res}, c.pol); got != c.want {
			t.Errorf("IsEDS(resolution %d, passthrough %v) = %v, want %v", c.res, c.pol.IsPassthroughLB(), got, c.want)
		}
	}
}

func TestErrorLocatesRule(t *testing.T) {
	p := For(push(t), "svc.example.com", 80, "")
	e := p.Error(p.TLSField+".mode", "bad %s", "mode")
	if e.Source != "rule.yaml (document 1)" || e.Key.Name != "r" || e.Field != "spec.trafficPolicy.tls.mode" || e.Message != "bad mode" {
		t.Errorf("Error = %+v", e)
	}
}
