package xds

import (
	"slices"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

// The default generator is the real translators; a proxy syncs with them
// and every resource they produce passes validation and consistency.
func TestDefaultGeneratorServesTheCoreTranslation(t *testing.T) {
	store := newTestStore(base()...)
	if _, ok := NewDiscoveryServer(Options{Store: store}).tr.Generator().(core.DefaultGenerator); !ok {
		t.Fatal("a nil Options.Generator does not select core.DefaultGenerator")
	}
	h := newHarnessWith(t, store, func(o *Options) { o.Generator = core.DefaultGenerator{} })
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	got := a.syncAll()
	if names := resourceNames(t, got[resource.ListenerType]); !slices.Equal(names, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners %v", names)
	}
	if names := resourceNames(t, got[resource.RouteType]); !slices.Equal(names, []string{"http.80"}) {
		t.Errorf("routes %v", names)
	}
	if names := resourceNames(t, got[resource.ClusterType]); !slices.Contains(names, "outbound|9080||reviews.default.svc.cluster.local") {
		t.Errorf("clusters %v", names)
	}
	a.barrier() // the RDS ACK has been handled
	if st := syncOf(t, h, nodeID("a"), "rds"); st.Status != "SYNCED" {
		t.Errorf("rds status %s", st.Status)
	}
	if _, tr := h.s.currentErrors(); len(tr) != 0 {
		t.Errorf("translation errors: %v", tr)
	}
}

// The default generator serves proxyless gRPC clients grpcgen's resources,
// each by the name the client asks for.
func TestDefaultGeneratorServesProxylessClients(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) { o.Generator = core.DefaultGenerator{} })
	h.syncAndWait()
	c := h.connectGRPC("app-1", true)
	for _, step := range []struct{ typeURL, name string }{
		{resource.ListenerType, reviewsLDS}, {resource.RouteType, reviewsLDS}, {resource.ClusterType, reviewsCDS}, {resource.EndpointType, reviewsCDS},
	} {
		c.subscribe(step.typeURL, step.name)
		resp := c.next(step.typeURL)
		if got := resourceNames(t, resp); !slices.Equal(got, []string{step.name}) {
			t.Errorf("%s %s: got %v", snapshot.ShortType(step.typeURL), step.name, got)
		}
		c.ack(resp)
	}
	c.barrier()
	if _, tr := h.s.currentErrors(); len(tr) != 0 {
		t.Errorf("translation errors: %v", tr)
	}
}
