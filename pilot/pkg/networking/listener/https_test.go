package listener

import (
	"os"
	"slices"
	"strings"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// mapStore is a SecretStore over "namespace/name" keys.
type mapStore map[string][2][]byte

func (m mapStore) Secret(ns, name string) ([]byte, []byte, bool) {
	v, ok := m[ns+"/"+name]
	return v[0], v[1], ok
}

// gatewayScope is the scope of gateways running as istio-system/gateway.
var gatewayScope = model.SecretScope{Identity: &model.Identity{Namespace: "istio-system", ServiceAccount: "gateway", Method: model.MethodToken}}

// secretNames renders secrets by name only: test output never shows keys.
func secretNames(secrets []*tlsv3.Secret) []string {
	var out []string
	for _, s := range secrets {
		out = append(out, s.GetName())
	}
	return out
}

func readPair(t *testing.T) (cert, key []byte) {
	t.Helper()
	cert, err := os.ReadFile("testdata/cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err = os.ReadFile("testdata/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func httpsServer(name string, tls *networking.ServerTLSSettings, hosts ...string) *networking.Server {
	return &networking.Server{Port: &networking.Port{Number: 443, Protocol: "HTTPS", Name: name}, Hosts: hosts, Tls: tls}
}

func simple(credential string) *networking.ServerTLSSettings {
	return &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: credential}
}

func TestHTTPSListener(t *testing.T) {
	cert, key := readPair(t)
	store := mapStore{"istio-system/web": {cert, key}}
	files := &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, ServerCertificate: "/etc/certs/c.pem", PrivateKey: "/etc/certs/k.pem",
		MinProtocolVersion: networking.ServerTLSSettings_TLSV1_3, CipherSuites: []string{"ECDHE-ECDSA-AES256-GCM-SHA384"}}
	mg := model.MergeGateways([]config.Config{
		gateway("a", httpsServer("https-web", simple("web"), "web.example.com", "*.web.example.com"), server(80, "HTTP")),
		gateway("b", httpsServer("https-any", files, "*")),
	})
	secrets, served, _, errs := BuildSecrets(mg, store, gatewayScope)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	if len(secrets) != 1 || secrets[0].Name != "kubernetes://web" ||
		string(secrets[0].GetTlsCertificate().GetCertificateChain().GetInlineBytes()) != string(cert) ||
		string(secrets[0].GetTlsCertificate().GetPrivateKey().GetInlineBytes()) != string(key) {
		t.Fatalf("secrets %v, want kubernetes://web holding istio-system/web's pair", secretNames(secrets))
	}
	if err := secrets[0].ValidateAll(); err != nil {
		t.Error(err)
	}
	ls, errs := BuildGatewayListeners(nil, served)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	if len(ls) != 2 || ls[0].Name != "0.0.0.0_443" || ls[1].Name != "0.0.0.0_80" {
		t.Fatalf("listeners %v", ls)
	}
	l := ls[0]
	if err := l.ValidateAll(); err != nil {
		t.Error(err)
	}
	if l.GetAddress().GetSocketAddress().GetPortValue() != 443 || l.GetTrafficDirection().String() != "OUTBOUND" {
		t.Errorf("address %v direction %v", l.GetAddress(), l.GetTrafficDirection())
	}
	if lf := l.GetListenerFilters(); len(lf) != 1 || lf[0].GetName() != "envoy.filters.listener.tls_inspector" || lf[0].GetTypedConfig() == nil {
		t.Errorf("listener filters %v, want the TLS inspector", lf)
	}
	chains := l.GetFilterChains()
	if len(chains) != 2 {
		t.Fatalf("chains %v", chains)
	}
	want := []struct {
		sni   []string
		route string
		sds   string
		file  string
		min   tlsv3.TlsParameters_TlsProtocol
	}{
		{[]string{"*.web.example.com", "web.example.com"}, "https.443.https-web.a.istio-system", "kubernetes://web", "", tlsv3.TlsParameters_TLSv1_2},
		{nil, "https.443.https-any.b.istio-system", "", "/etc/certs/c.pem", tlsv3.TlsParameters_TLSv1_3},
	}
	for i, w := range want {
		fc := chains[i]
		if !slices.Equal(fc.GetFilterChainMatch().GetServerNames(), w.sni) {
			t.Errorf("chain %d: server names %v, want %v", i, fc.GetFilterChainMatch().GetServerNames(), w.sni)
		}
		ts := fc.GetTransportSocket()
		if ts.GetName() != "envoy.transport_sockets.tls" {
			t.Errorf("chain %d: transport socket %s", i, ts.GetName())
		}
		dtc := &tlsv3.DownstreamTlsContext{}
		if err := ts.GetTypedConfig().UnmarshalTo(dtc); err != nil {
			t.Fatal(err)
		}
		if err := dtc.ValidateAll(); err != nil {
			t.Errorf("chain %d: %v", i, err)
		}
		ctx := dtc.GetCommonTlsContext()
		if dtc.GetRequireClientCertificate().GetValue() || !slices.Equal(ctx.GetAlpnProtocols(), []string{"h2", "http/1.1"}) {
			t.Errorf("chain %d: client cert %v alpn %v", i, dtc.GetRequireClientCertificate(), ctx.GetAlpnProtocols())
		}
		if p := ctx.GetTlsParams(); p.GetTlsMinimumProtocolVersion() != w.min || p.GetTlsMaximumProtocolVersion() != tlsv3.TlsParameters_TLSv1_3 {
			t.Errorf("chain %d: tls params %v", i, p)
		}
		if w.sds != "" {
			sds := ctx.GetTlsCertificateSdsSecretConfigs()
			if len(sds) != 1 || sds[0].GetName() != w.sds || sds[0].GetSdsConfig().GetAds() == nil || len(ctx.GetTlsCertificates()) != 0 {
				t.Errorf("chain %d: sds %v", i, sds)
			}
		} else {
			certs := ctx.GetTlsCertificates()
			if len(certs) != 1 || certs[0].GetCertificateChain().GetFilename() != w.file || certs[0].GetPrivateKey().GetFilename() != "/etc/certs/k.pem" {
				t.Errorf("chain %d: certificates %v", i, certs)
			}
			if !slices.Equal(ctx.GetTlsParams().GetCipherSuites(), []string{"ECDHE-ECDSA-AES256-GCM-SHA384"}) {
				t.Errorf("chain %d: cipher suites %v", i, ctx.GetTlsParams().GetCipherSuites())
			}
		}
		hcm := &hcmv3.HttpConnectionManager{}
		if len(fc.GetFilters()) != 1 || fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm) != nil {
			t.Fatalf("chain %d: filters %v", i, fc.GetFilters())
		}
		checkHCM(t, hcm, "0.0.0.0_443", w.route)
	}
}

// A server whose Secret is missing or unusable is reported, naming the
// gateway, server and Secret, and left out; the other servers stay.
func TestBuildSecretsDropsServersWithoutCertificate(t *testing.T) {
	cert, key := readPair(t)
	store := mapStore{"istio-system/good": {cert, key}, "istio-system/swapped": {key, cert}}
	mg := model.MergeGateways([]config.Config{gateway("gw",
		httpsServer("good", simple("good"), "good.example.com"),
		httpsServer("missing", simple("missing"), "missing.example.com"),
		httpsServer("swapped", simple("swapped"), "swapped.example.com"),
		httpsServer("good-again", simple("good"), "again.example.com"),
	)})
	secrets, served, _, errs := BuildSecrets(mg, store, gatewayScope)
	if len(secrets) != 1 || secrets[0].GetName() != "kubernetes://good" {
		t.Errorf("secrets %v, want the good one once", secretNames(secrets))
	}
	var kept []string
	for _, s := range served.HTTPSServers[443] {
		kept = append(kept, s.Server.GetPort().GetName())
	}
	if !slices.Equal(kept, []string{"good", "good-again"}) {
		t.Errorf("servers kept %v", kept)
	}
	if len(mg.HTTPSServers[443]) != 4 {
		t.Error("BuildSecrets modified its input")
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v", errs)
	}
	if e := errs[0]; e.Key.Name != "gw" || e.Field != "spec.servers[1].tls.credentialName" ||
		!strings.Contains(e.Message, "server missing on port 443: Secret istio-system/missing does not exist") {
		t.Errorf("missing: %v", e)
	}
	if e := errs[1]; e.Field != "spec.servers[2].tls.credentialName" || !strings.Contains(e.Message, "Secret istio-system/swapped holds no usable certificate and key") {
		t.Errorf("swapped: %v", e)
	}
	ls, lerrs := BuildGatewayListeners(nil, served)
	if len(lerrs) != 0 || len(ls) != 1 || len(ls[0].GetFilterChains()) != 2 {
		t.Errorf("listeners %v errors %v", ls, lerrs)
	}

	// Without a store every credential is missing; no listener is left.
	secrets, served, _, errs = BuildSecrets(mg, nil, gatewayScope)
	if len(secrets) != 0 || len(served.HTTPSPorts) != 0 || len(errs) != 4 {
		t.Errorf("nil store: %v %v %v", secretNames(secrets), served.HTTPSPorts, errs)
	}
	if ls, _ := BuildGatewayListeners(nil, served); len(ls) != 0 {
		t.Errorf("listeners %v", ls)
	}
}

func TestInvalidHTTPSChainIsReported(t *testing.T) {
	bad := &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, ServerCertificate: "/c", PrivateKey: "/k",
		MaxProtocolVersion: networking.ServerTLSSettings_TLSV1_1}
	mg := model.MergeGateways([]config.Config{gateway("gw", httpsServer("bad", bad, "a.com"), httpsServer("ok", simple("c"), "b.com"))})
	_, served, _, _ := BuildSecrets(mg, mapStore{}, gatewayScope)
	if len(served.HTTPSServers[443]) != 1 {
		t.Fatalf("served %v", served.HTTPSServers)
	}
	// Both servers reach the listener when the secret check is skipped.
	ls, errs := BuildGatewayListeners(nil, mg)
	if len(ls) != 1 || len(ls[0].GetFilterChains()) != 1 || ls[0].GetFilterChains()[0].GetFilterChainMatch().GetServerNames()[0] != "b.com" {
		t.Errorf("listeners %v", ls)
	}
	if len(errs) != 1 || errs[0].Field != "spec.servers[0]" || !strings.Contains(errs[0].Message, "minimum TLS version TLSv1_2 is above maximum TLSv1_1") {
		t.Errorf("errors %v", errs)
	}
}
