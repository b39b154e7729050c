package cluster

import (
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

func TestTLSSimpleWithCA(t *testing.T) {
	cs, errs := build(t, join(se("ext", "api.example.com", "DNS", ""), dr("r", "api.example.com", `  trafficPolicy:
    tls:
      mode: SIMPLE
      caCertificates: /etc/ca.pem
      caCrl: /etc/crl.pem
      sni: api.example.com
      subjectAltNames: [api.example.com, "spiffe://td/ns/x/sa/y"]
`)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := get(t, cs, "outbound|80||api.example.com")
	ctx := tlsContext(t, c)
	if ctx == nil {
		t.Fatal("no TLS transport socket")
	}
	if ctx.GetSni() != "api.example.com" {
		t.Errorf("sni %q", ctx.GetSni())
	}
	common := ctx.GetCommonTlsContext()
	if common.GetTlsParams().GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_2 {
		t.Errorf("minimum TLS version %v", common.GetTlsParams())
	}
	vc := common.GetValidationContext()
	if vc.GetTrustedCa().GetFilename() != "/etc/ca.pem" || vc.GetCrl().GetFilename() != "/etc/crl.pem" {
		t.Errorf("validation context %v", vc)
	}
	sans := vc.GetMatchTypedSubjectAltNames()
	if len(sans) != 2 || sans[0].GetSanType() != tlsv3.SubjectAltNameMatcher_DNS || sans[0].GetMatcher().GetExact() != "api.example.com" ||
		sans[1].GetSanType() != tlsv3.SubjectAltNameMatcher_URI || sans[1].GetMatcher().GetExact() != "spiffe://td/ns/x/sa/y" {
		t.Errorf("SAN matchers %v", sans)
	}
	if len(common.GetAlpnProtocols()) != 0 {
		t.Errorf("HTTP/1.1 cluster must not offer ALPN %v", common.GetAlpnProtocols())
	}
	if httpOpts(t, c) != nil {
		t.Error("explicit sni needs no auto_sni options")
	}
	// The GRPC port speaks HTTP/2, so TLS offers h2.
	if alpn := tlsContext(t, get(t, cs, "outbound|9090||api.example.com")).GetCommonTlsContext().GetAlpnProtocols(); len(alpn) != 1 || alpn[0] != "h2" {
		t.Errorf("HTTP/2 cluster ALPN %v, want [h2]", alpn)
	}
}

func TestTLSSimpleCredentialAndUnverified(t *testing.T) {
	cs, errs := build(t, join(se("ext", "creds.example.com, open.example.com, skip.example.com", "DNS", ""),
		dr("creds", "creds.example.com", "  trafficPolicy: {tls: {mode: SIMPLE, credentialName: my-ca}}"),
		dr("open", "open.example.com", "  trafficPolicy: {tls: {mode: SIMPLE}}"),
		dr("skip", "skip.example.com", "  trafficPolicy: {tls: {mode: SIMPLE, credentialName: my-ca, insecureSkipVerify: true}}")))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	creds := get(t, cs, "outbound|80||creds.example.com")
	combined := tlsContext(t, creds).GetCommonTlsContext().GetCombinedValidationContext()
	sds := combined.GetValidationContextSdsSecretConfig()
	if sds.GetName() != "kubernetes://my-ca-cacert" || sds.GetSdsConfig().GetAds() == nil {
		t.Errorf("credentialName SDS config %v", sds)
	}
	if up := httpOpts(t, creds).GetUpstreamHttpProtocolOptions(); !up.GetAutoSni() || !up.GetAutoSanValidation() {
		t.Errorf("no sni and verification on: want auto_sni and auto_san_validation, got %v", up)
	}

	// SIMPLE without a CA verifies against the system roots, as istiod
	// 1.29 does (SDS "file-root:system" there, the bundle's file here),
	// and checks the certificate against the request's host.
	open := get(t, cs, "outbound|80||open.example.com")
	common := tlsContext(t, open).GetCommonTlsContext()
	if ca := common.GetValidationContext().GetTrustedCa().GetFilename(); ca != SystemCABundle {
		t.Errorf("open.example.com: SIMPLE without a CA must trust the system bundle %s, got %v", SystemCABundle, common.GetValidationContextType())
	}
	if up := httpOpts(t, open).GetUpstreamHttpProtocolOptions(); !up.GetAutoSni() || !up.GetAutoSanValidation() {
		t.Errorf("open.example.com: want auto_sni and auto_san_validation, got %v", up)
	}
	// insecureSkipVerify alone turns verification off.
	skip := get(t, cs, "outbound|80||skip.example.com")
	if vc := tlsContext(t, skip).GetCommonTlsContext().GetValidationContextType(); vc != nil {
		t.Errorf("skip.example.com: insecureSkipVerify must not verify: %v", vc)
	}
	if up := httpOpts(t, skip).GetUpstreamHttpProtocolOptions(); !up.GetAutoSni() || up.GetAutoSanValidation() {
		t.Errorf("skip.example.com: want auto_sni without SAN validation, got %v", up)
	}
	// Every SIMPLE context offers TLS 1.2 to 1.3 (istiod's
	// defaultUpstreamCommonTLSContext).
	for _, c := range []string{"creds", "open", "skip"} {
		p := tlsContext(t, get(t, cs, "outbound|80||"+c+".example.com")).GetCommonTlsContext().GetTlsParams()
		if p.GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_2 || p.GetTlsMaximumProtocolVersion() != tlsv3.TlsParameters_TLSv1_3 {
			t.Errorf("%s: TLS params %v, want 1.2 to 1.3", c, p)
		}
	}
}

func TestTLSDisableAndIstioMutualUnsupported(t *testing.T) {
	cs, errs := build(t, join(backend,
		dr("r", "backend.example.com", `  trafficPolicy:
    loadBalancer: {simple: RANDOM}
    tls: {mode: ISTIO_MUTUAL}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {tls: {mode: DISABLE}}
`)))
	for name, c := range cs {
		if c.GetTransportSocket() != nil {
			t.Errorf("%s has a transport socket; DISABLE and unsupported modes must stay plaintext", name)
		}
	}
	if lb := get(t, cs, "outbound|80||backend.example.com").GetLbPolicy().String(); lb != "RANDOM" {
		t.Errorf("the rule's other settings must still apply, lb %s", lb)
	}
	// One error per rule although ISTIO_MUTUAL governs two clusters.
	if len(errs) != 1 {
		t.Fatalf("errors %v, want 1", errs)
	}
	if e := errs[0]; e.Key.Name != "r" || e.Field != "spec.trafficPolicy.tls.mode" || e.Warning {
		t.Errorf("first error %+v", e)
	}
}

func TestTLSMutual(t *testing.T) {
	cs, errs := build(t, join(se("ext", "creds.example.com, files.example.com", "DNS", ""),
		dr("creds", "creds.example.com", `  trafficPolicy:
    portLevelSettings:
    - port: {number: 80}
      tls: {mode: MUTUAL, credentialName: client, sni: creds.internal, subjectAltNames: [creds.internal]}
`),
		dr("files", "files.example.com", "  trafficPolicy: {tls: {mode: MUTUAL, clientCertificate: /c.pem, privateKey: /k.pem, caCertificates: /ca.pem}}")))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ctx := tlsContext(t, get(t, cs, "outbound|80||creds.example.com"))
	common := ctx.GetCommonTlsContext()
	if certs := common.GetTlsCertificateSdsSecretConfigs(); len(certs) != 1 || certs[0].GetName() != "kubernetes://client" || certs[0].GetSdsConfig().GetAds() == nil {
		t.Errorf("client certificate over SDS: %v", certs)
	}
	combined := common.GetCombinedValidationContext()
	if combined.GetValidationContextSdsSecretConfig().GetName() != "kubernetes://client-cacert" ||
		combined.GetDefaultValidationContext().GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact() != "creds.internal" {
		t.Errorf("CA and names: %v", combined)
	}
	if ctx.GetSni() != "creds.internal" {
		t.Errorf("sni %q", ctx.GetSni())
	}
	if tlsContext(t, get(t, cs, "outbound|9090||creds.example.com")) != nil {
		t.Error("port-level MUTUAL applies to port 80 only")
	}
	files := tlsContext(t, get(t, cs, "outbound|80||files.example.com")).GetCommonTlsContext()
	if c := files.GetTlsCertificates(); len(c) != 1 || c[0].GetCertificateChain().GetFilename() != "/c.pem" || c[0].GetPrivateKey().GetFilename() != "/k.pem" {
		t.Errorf("client certificate files: %v", c)
	}
	if files.GetValidationContext().GetTrustedCa().GetFilename() != "/ca.pem" {
		t.Errorf("CA file: %v", files.GetValidationContext())
	}
}

func TestInvalidTLSDropsTheCluster(t *testing.T) {
	// Envoy limits SNI to 255 bytes; plaintext is not an acceptable
	// fallback for a cluster that asked for TLS.
	long := strings.Repeat("a", 300)
	cs, errs := build(t, join(backend, dr("r", "backend.example.com", "  trafficPolicy: {tls: {mode: SIMPLE, sni: "+long+"}}")))
	if len(cs) != 0 {
		t.Errorf("clusters %v, want none", cs)
	}
	if len(errs) != 2 || errs[0].Field != "spec.trafficPolicy.tls" || !strings.Contains(errs[0].Message, "is not built") {
		t.Errorf("errors %v, want one per dropped cluster at spec.trafficPolicy.tls", errs)
	}
}
