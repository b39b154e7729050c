package featuretest

import (
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

const (
	reviewsV1 = "outbound|9080|v1|reviews.default.svc.cluster.local"
	reviewsV2 = "outbound|9080|v2|reviews.default.svc.cluster.local"
	reviews   = "outbound|9080||reviews.default.svc.cluster.local"
)

// Gateways select proxies by their LABELS: each gateway gets only the
// listeners of the Gateways that select it, and every gateway gets the
// clusters and endpoints.
func TestGatewaysSelectProxiesByLabels(t *testing.T) {
	e := newEnv(t, baseFiles())
	public := e.gateway("public-1", publicLabels, nil)
	internal := e.gateway("internal-1", map[string]string{"istio": "internal"}, nil)
	other := e.gateway("other-1", map[string]string{"app": "nothing-selects-me"}, nil)

	ps := waitFor(t, public, "public gateway config", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_80"] != nil && s.Routes["http.80"] != nil && len(s.Endpoints) >= 3
	})
	if got := ps.Names(adsc.ListenerType); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("public listeners %v", got)
	}
	if !hasPrefix(ps, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Errorf("public routes %v", routePrefixes(ps, "http.80"))
	}
	if got := domains(ps, "http.80"); !slices.Contains(got, "bookinfo.example.com") || slices.Contains(got, "internal.example.com") {
		t.Errorf("public domains %v", got)
	}
	for _, c := range []string{reviews, reviewsV1, reviewsV2} {
		if ps.Clusters[c] == nil {
			t.Errorf("cluster %s missing: %v", c, ps.Names(adsc.ClusterType))
		}
	}
	if got := endpointAddresses(ps, reviewsV1); !slices.Equal(got, []string{"127.0.0.11"}) {
		t.Errorf("subset v1 endpoints %v", got)
	}
	if got := endpointAddresses(ps, reviews); !slices.Equal(got, []string{"127.0.0.11", "127.0.0.12"}) {
		t.Errorf("all endpoints %v", got)
	}

	is := waitFor(t, internal, "internal gateway config", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_8080"] != nil && s.Routes["http.8080"] != nil
	})
	if got := is.Names(adsc.ListenerType); !slices.Equal(got, []string{"0.0.0.0_8080"}) {
		t.Errorf("internal listeners %v", got)
	}
	if got := domains(is, "http.8080"); !slices.Contains(got, "internal.example.com") || slices.Contains(got, "bookinfo.example.com") {
		t.Errorf("internal domains %v", got)
	}

	os := waitFor(t, other, "unselected proxy gets clusters", func(s adsc.State) bool {
		return s.Clusters[reviews] != nil && s.Types[adsc.ListenerType].ACKs > 0
	})
	if n := len(os.Listeners); n != 0 {
		t.Errorf("a proxy no Gateway selects has no listeners, got %v", os.Names(adsc.ListenerType))
	}
}

// A VirtualService change re-sends routes only: clusters, endpoints and
// listeners keep their versions and are not sent again.
func TestRouteChangePushesOnlyRoutes(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	before := waitFor(t, c, "initial config", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	e.write("routes.yaml", routesYAML("/reviews/v2"))
	after := waitFor(t, c, "new prefix", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews/v2") })
	// A second route change is a barrier: the stream is ordered, so any
	// other type the first push re-sent has arrived by the time it has.
	e.write("routes.yaml", routesYAML("/reviews/v3"))
	after = waitFor(t, c, "barrier prefix", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews/v3") })

	for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType} {
		b, a := before.Types[typ], after.Types[typ]
		if a.Version != b.Version || a.ACKs != b.ACKs {
			t.Errorf("%s re-sent on a route change: version %s -> %s, ACKs %d -> %d", adsc.ShortName(typ), b.Version, a.Version, b.ACKs, a.ACKs)
		}
	}
	if b, a := before.Types[adsc.RouteType], after.Types[adsc.RouteType]; a.ACKs != b.ACKs+2 {
		t.Errorf("RDS ACKs %d -> %d, want two more", b.ACKs, a.ACKs)
	}
}

// An endpoint change re-sends endpoints only.
func TestEndpointChangePushesOnlyEndpoints(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	before := waitFor(t, c, "initial config", func(s adsc.State) bool { return allACKed(s) && len(endpointAddresses(s, reviewsV1)) == 1 })

	e.write("services.yaml", replaceOnce(t, servicesYAML, "127.0.0.11", "127.0.0.21"))
	after := waitFor(t, c, "moved endpoint", func(s adsc.State) bool {
		return slices.Equal(endpointAddresses(s, reviewsV1), []string{"127.0.0.21"})
	})
	e.write("routes.yaml", routesYAML("/barrier"))
	after = waitFor(t, c, "barrier", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/barrier") })

	for _, typ := range []string{adsc.ClusterType, adsc.ListenerType} {
		if b, a := before.Types[typ], after.Types[typ]; a.Version != b.Version || a.ACKs != b.ACKs {
			t.Errorf("%s re-sent on an endpoint change: %s -> %s", adsc.ShortName(typ), b.Version, a.Version)
		}
	}
	if got := endpointAddresses(after, reviewsV2); !slices.Equal(got, []string{"127.0.0.12"}) {
		t.Errorf("untouched subset v2: %v", got)
	}
}

// Proxies join and leave while config changes; each gets the current
// config, and one that joins late gets the same as one that was there.
func TestLateJoinerGetsCurrentConfig(t *testing.T) {
	e := newEnv(t, baseFiles())
	early := e.gateway("gw-early", publicLabels, nil)
	waitFor(t, early, "initial", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") })
	e.write("routes.yaml", routesYAML("/later"))
	es := waitFor(t, early, "update", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/later")
	})

	late := e.gateway("gw-late", publicLabels, nil)
	ls := waitFor(t, late, "late joiner", allACKed)
	if !hasPrefix(ls, "http.80", "bookinfo.example.com:80", "/later") {
		t.Errorf("late joiner routes %v", routePrefixes(ls, "http.80"))
	}
	for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType, adsc.RouteType} {
		if es.Version(typ) != ls.Version(typ) {
			t.Errorf("%s: early %s, late %s: same gateway config must have the same version", adsc.ShortName(typ), es.Version(typ), ls.Version(typ))
		}
	}
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	i := indexOf(s, old)
	if i < 0 {
		t.Fatalf("%q not in fixture", old)
	}
	return s[:i] + new + s[i+len(old):]
}

func indexOf(s, sub string) int { return strings.Index(s, sub) }
