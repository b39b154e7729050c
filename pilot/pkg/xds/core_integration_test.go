package xds

import (
	"slices"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// The default generator is the real translators; a proxy syncs with them
// and every resource they produce passes validation and consistency.
func TestDefaultGeneratorServesTheCoreTranslation(t *testing.T) {
	store := newTestStore(base()...)
	if _, ok := NewDiscoveryServer(Options{Store: store}).gen.(CoreGenerator); !ok {
		t.Fatal("a nil Options.Generator does not select CoreGenerator")
	}
	h := newHarness(t, store)
	h.s.gen = CoreGenerator{}
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
