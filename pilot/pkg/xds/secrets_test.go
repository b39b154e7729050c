package xds

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
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
	if err := h.snapshot(nodeID("a")).Consistent(); err != nil {
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

// Whatever a generator returns, a proxy without a verified identity is
// sent no secret: they are dropped, and with them the listener that names
// one (reported), while the rest of its config is served.
func TestUnauthenticatedProxyGetsNoSecrets(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	const cert = "kubernetes://cert"
	h.gen.extraListeners = []*listener.Listener{tlsListener("0.0.0.0_443", 443, "http.80", cert)}
	h.gen.extraSecrets = []*tlsv3.Secret{tlsSecret(cert)}
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	got := a.syncAll()
	if names := resourceNames(t, got[resource.ListenerType]); !slices.Equal(names, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners %v, want the plain one only", names)
	}
	a.subscribe(resource.SecretType, cert)
	if sds := a.next(resource.SecretType); len(sds.GetResources()) != 0 {
		t.Errorf("unauthenticated proxy was sent %d secrets", len(sds.GetResources()))
	}
	if v := h.snapshot(nodeID("a")); len(v.Sets[snapshot.SDS].Items) != 0 {
		t.Errorf("unauthenticated proxy's view holds %d secrets", len(v.Sets[snapshot.SDS].Items))
	}
}

// config_dump shows secrets as Envoy's admin does: the certificate as
// sent, the private key "[redacted]".
func TestConfigDumpRedactsSecrets(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	const cert = "kubernetes://cert"
	h.gen.extraListeners = []*listener.Listener{tlsListener("0.0.0.0_443", 443, "http.80", cert)}
	h.gen.extraSecrets = []*tlsv3.Secret{tlsSecret(cert)}
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels, withIdentity("istio-system", "gateway"))
	a.syncAll()
	code, body := h.get("/debug/config_dump?proxyID=" + nodeID("a"))
	if code != 200 {
		t.Fatalf("config_dump = %d %s", code, body)
	}
	var dump admin.ConfigDump
	if err := protojson.Unmarshal(body, &dump); err != nil {
		t.Fatal(err)
	}
	var sds admin.SecretsConfigDump
	if n := len(dump.GetConfigs()); n != 5 || dump.GetConfigs()[4].UnmarshalTo(&sds) != nil || len(sds.GetDynamicActiveSecrets()) != 1 {
		t.Fatalf("config_dump has %d sections, want the secrets last with one secret", n)
	}
	ds := sds.GetDynamicActiveSecrets()[0]
	var sec tlsv3.Secret
	if err := ds.GetSecret().UnmarshalTo(&sec); err != nil {
		t.Fatal(err)
	}
	c := sec.GetTlsCertificate()
	if ds.GetName() != cert || sec.GetName() != cert || ds.GetVersionInfo() == "" ||
		string(c.GetCertificateChain().GetInlineBytes()) != "cert of "+cert || c.GetPrivateKey().GetInlineString() != "[redacted]" {
		t.Errorf("secret in config_dump: name %q version %q, chain %q, key %q", ds.GetName(), ds.GetVersionInfo(),
			c.GetCertificateChain().GetInlineBytes(), c.GetPrivateKey().GetInlineString())
	}
	if strings.Contains(string(body), "key of") || strings.Contains(string(body), base64.StdEncoding.EncodeToString([]byte("key of "+cert))) {
		t.Error("config_dump shows the private key")
	}
}
