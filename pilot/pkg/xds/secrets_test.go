package xds

import (
	"slices"
	"strings"
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Secrets a gateway's listeners name are served over ADS by name; a secret
// nobody names, and a listener naming a missing secret, are dropped and
// reported, so the view stays consistent.
func TestGatewaySecretsAreServedByName(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	const cert = "kubernetes://istio-system/cert"
	h.gen.extraListeners = []*listener.Listener{
		tlsListener("0.0.0.0_443", 443, "http.80", cert),
		tlsListener("0.0.0.0_8443", 8443, "http.80", "kubernetes://istio-system/missing"),
	}
	h.gen.extraSecrets = []*tlsv3.Secret{tlsSecret(cert), tlsSecret("kubernetes://istio-system/unused")}
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels, withIdentity("istio-system", "gateway"))
	got := a.syncAll()
	if names := resourceNames(t, got[resource.ListenerType]); !slices.Equal(names, []string{"0.0.0.0_443", "0.0.0.0_80"}) {
		t.Errorf("listeners %v, want the plain one and the one whose secret exists", names)
	}
	a.subscribe(resource.SecretType, cert)
	sds := a.next(resource.SecretType)
	if names := resourceNames(t, sds); !slices.Equal(names, []string{cert}) {
		t.Errorf("secrets %v, want [%s]", names, cert)
	}
	a.ack(sds)
	a.barrier()
	if err := h.snapshot(nodeID("a")).consistent(); err != nil {
		t.Error(err)
	}
	_, tr := h.s.currentErrors()
	var msgs []string
	for _, e := range tr {
		msgs = append(msgs, e.Error())
	}
	for _, want := range []string{"generated lds 0.0.0.0_8443: refers to sds [kubernetes://istio-system/missing]",
		"generated sds kubernetes://istio-system/unused: is not referred to"} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("translation errors %q lack %q", msgs, want)
		}
	}
	if st := syncOf(t, h, nodeID("a"), "sds"); st.Status != "SYNCED" || st.AckedVersion != sds.GetVersionInfo() {
		t.Errorf("syncz sds %+v", st)
	}
}
