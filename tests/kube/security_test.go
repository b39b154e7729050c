package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
)

// secureEnv is a server in Kubernetes mode with its secure port on
// loopback, its self-signed CA in namespace wf, client certificates
// verified against clientCA, and gateways in namespace ns.
type secureEnv struct {
	*env
	wf       string
	other    string
	clientCA *certs.CA
	rootPEM  []byte
}

func newSecureEnv(t *testing.T) *secureEnv {
	t.Helper()
	return newSecureEnvWith(t, "sec", bootstrap.Options{
		Security: bootstrap.SecurityOptions{DebugAdminServiceAccounts: []string{"kube-system/named-admin"}},
	})
}

// newSecureEnvWith is a secureEnv in new namespaces named after prefix,
// its server started with opts plus what the env sets (the cluster, the
// namespaces, the secure port and the client CA).
func newSecureEnvWith(t *testing.T, prefix string, opts bootstrap.Options) *secureEnv {
	t.Helper()
	c, ns := newCluster(t, prefix)
	e := &secureEnv{env: clientEnv(t, c, ns), wf: c.Namespace(t, prefix+"-wf"), other: c.Namespace(t, prefix+"-other")}
	e.clientCA = certs.NewCA(t, "client-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	e.must(os.WriteFile(caFile, e.clientCA.PEM, 0o600))
	e.createGateway("gw")
	e.createVS(e.virtualService("first", "first.example.com", "x.example.com", ""))
	opts.Kubeconfig, opts.WatchNamespaces, opts.PodNamespace = c.Kubeconfig, []string{ns}, e.wf
	opts.Security.SecureGRPCAddr, opts.Security.ClientCAFile = "127.0.0.1:0", caFile
	e.server = startServer(t, opts)
	cm, err := e.kube.CoreV1().ConfigMaps(e.wf).Get(ctx, security.RootCertConfigMap, metav1.GetOptions{})
	e.must(err)
	e.rootPEM = []byte(cm.Data[security.RootCertKey])
	return e
}

// tlsConfig trusts only root-cert.pem from the ConfigMap and checks the
// name gateways dial.
func (e *secureEnv) tlsConfig(clientCert *certs.Leaf) *tls.Config {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.rootPEM) {
		e.t.Fatal("root-cert.pem holds no certificate")
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "pilot-discovery." + e.wf + ".svc"}
	if clientCert != nil {
		// Present the certificate whatever CAs the server names, as Envoy
		// does (Go's client would otherwise send none).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &clientCert.Pair, nil }
	}
	return cfg
}

// dial connects a gateway in namespace ns (pod name pod) to the secure port.
func (e *secureEnv) dial(ns, pod, token string, clientCert *certs.Leaf) (*adsc.Client, error) {
	cctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := adsc.Dial(cctx, adsc.Config{
		Address: e.server.SecureGRPCAddr().String(),
		Node:    adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: ns, Labels: map[string]string{"istio": "ingressgateway"}}),
		TLS:     e.tlsConfig(clientCert),
		Token:   token,
	})
	if err == nil {
		e.t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// refused dials and returns how the stream ended; nil means it was served
// config instead.
func (e *secureEnv) refused(ns, pod, token string, clientCert *certs.Leaf) error {
	e.t.Helper()
	c, err := e.dial(ns, pod, token, clientCert)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- c.WaitFor(wctx, func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
	}()
	select {
	case <-c.Done():
		return c.Err()
	case err := <-served:
		if err != nil {
			return fmt.Errorf("neither served nor refused: %w", err)
		}
		return nil
	}
}

// deltaClusters opens a delta ADS stream to the secure port and waits for
// its first CDS response.
func (e *secureEnv) deltaClusters(ns, pod, token string) error {
	e.t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(e.tlsConfig(nil)))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	cc, err := grpc.NewClient(e.server.SecureGRPCAddr().String(), opts...)
	if err != nil {
		return err
	}
	defer cc.Close()
	sctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(sctx)
	if err != nil {
		return err
	}
	node := adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: ns, Labels: map[string]string{"istio": "ingressgateway"}})
	if err := stream.Send(&discoverygrpc.DeltaDiscoveryRequest{Node: node, TypeUrl: resourcev3.ClusterType}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	resp, err := stream.Recv()
	if err != nil {
		return err
	}
	if resp.GetTypeUrl() != resourcev3.ClusterType {
		return fmt.Errorf("first delta response is %s, want clusters", resp.GetTypeUrl())
	}
	return nil
}

// bearer sends "authorization: Bearer TOKEN" with each stream, over TLS.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

func (e *secureEnv) debug(path, token string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+e.server.HTTPAddr().String()+path, nil)
	e.must(err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	e.must(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	e.must(err)
	return resp.StatusCode, string(body)
}

func wantCode(t *testing.T, what string, err error, code codes.Code, contains ...string) {
	t.Helper()
	st, _ := status.FromError(err)
	if err == nil || st.Code() != code {
		t.Errorf("%s: %v, want %s", what, err, code)
		return
	}
	for _, c := range contains {
		if !strings.Contains(st.Message(), c) {
			t.Errorf("%s: %q does not name %q", what, st.Message(), c)
		}
	}
}

// The secure port end to end with the real API server: its self-signed CA
// is published and trusted; real ServiceAccount tokens and client
// certificates are accepted for their own namespace and everything else is
// refused, while a good gateway keeps getting updates; adsz shows who is
// who; refusals are counted by reason.
func TestSecurePortAuthenticatesGateways(t *testing.T) {
	e := newSecureEnv(t)
	aud := []string{"wayfinder"}

	// The CA lives in the Secret, its certificate in the ConfigMap, and it
	// is what the server chains to.
	sec, err := e.kube.CoreV1().Secrets(e.wf).Get(ctx, security.CASecretName, metav1.GetOptions{})
	e.must(err)
	if len(sec.Data["tls.key"]) == 0 || string(sec.Data["ca.crt"]) != string(e.rootPEM) {
		t.Fatalf("Secret %s/%s lacks the key pair or its ca.crt is not the published root cert", e.wf, security.CASecretName)
	}
	if string(e.server.RootCertPEM()) != string(e.rootPEM) {
		t.Error("the server serves another CA than ConfigMap root-cert.pem")
	}

	// A good gateway with a token for audience wayfinder.
	good, err := e.dial(e.ns, "gw-token", e.c.Token(t, e.ns, "gateway", aud, time.Hour), nil)
	e.must(err)
	waitFor(t, good, "config over TLS with a token", func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
	// istio-ca, Istio's audience, works too.
	if err := e.refused(e.ns, "gw-istio", e.c.Token(t, e.ns, "gateway", []string{"istio-ca"}, time.Hour), nil); err != nil {
		t.Errorf("token for audience istio-ca: %v", err)
	}
	// A good client certificate.
	byCert, err := e.dial(e.ns, "gw-cert", "", e.clientCA.Client(t, certs.SPIFFE("cluster.local", e.ns, "gateway-cert")))
	e.must(err)
	waitFor(t, byCert, "config over TLS with a client certificate", func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })

	// Delta ADS is served on the secure port too, and refused the same way.
	if err := e.deltaClusters(e.ns, "gw-delta", e.c.Token(t, e.ns, "gateway", aud, time.Hour)); err != nil {
		t.Errorf("delta ADS with a good token: %v", err)
	}
	wantCode(t, "delta ADS without a credential", e.deltaClusters(e.ns, "gw-delta-none", ""), codes.Unauthenticated)

	// Refused, each ending only its own stream.
	wantCode(t, "no credential", e.refused(e.ns, "gw-none", "", nil), codes.Unauthenticated)
	wantCode(t, "token of another namespace", e.refused(e.ns, "gw-other", e.c.Token(t, e.other, "gateway", aud, time.Hour), nil),
		codes.PermissionDenied, fmt.Sprintf("%q", e.ns), fmt.Sprintf("%q", e.other))
	wantCode(t, "token for another audience", e.refused(e.ns, "gw-aud", e.c.Token(t, e.ns, "gateway", []string{"elsewhere"}, time.Hour), nil),
		codes.Unauthenticated)
	// A token signed by the API server's key: accepted while valid,
	// refused once expired.
	if err := e.refused(e.ns, "gw-signed", e.c.SignedToken(t, e.ns, "gateway", aud, time.Now().Add(time.Hour)), nil); err != nil {
		t.Fatalf("a valid token signed with the service-account key is refused (%v): the expired case would prove nothing", err)
	}
	wantCode(t, "expired token", e.refused(e.ns, "gw-expired", e.c.SignedToken(t, e.ns, "gateway", aud, time.Now().Add(-time.Minute)), nil),
		codes.Unauthenticated)
	otherCA := certs.NewCA(t, "other-ca")
	if err := e.refused(e.ns, "gw-badca", "", otherCA.Client(t, certs.SPIFFE("cluster.local", e.ns, "gateway"))); err == nil {
		t.Error("a certificate from another CA was served")
	}
	wantCode(t, "certificate of another namespace", e.refused(e.ns, "gw-certns", "", e.clientCA.Client(t, certs.SPIFFE("cluster.local", e.other, "gw"))),
		codes.PermissionDenied, e.other)
	// The good gateway's node id, another identity: refused, and the good
	// gateway is not disturbed.
	wantCode(t, "node id taken by another identity", e.refused(e.ns, "gw-token", e.c.Token(t, e.ns, "intruder", aud, time.Hour), nil),
		codes.PermissionDenied, "gw-token")

	// The good gateways are still served and still get updates.
	e.createVS(e.virtualService("second", "second.example.com", "x.example.com", ""))
	for _, c := range []*adsc.Client{good, byCert} {
		waitFor(t, c, "an update after the refusals", func(s adsc.State) bool { return virtualHost(s, "second.example.com", "") })
	}

	for reason, least := range map[string]float64{
		security.ReasonNoCredential: 1, security.ReasonInvalidToken: 2, security.ReasonNamespaceMismatch: 2,
		security.ReasonInvalidCertificate: 1, security.ReasonIdentityConflict: 1,
	} {
		if got := e.metric(fmt.Sprintf(`wayfinder_xds_auth_failures_total{reason=%q}`, reason)); got < least {
			t.Errorf("wayfinder_xds_auth_failures_total{reason=%q} = %v, want at least %v", reason, got, least)
		}
	}

	// adsz shows the verified identities.
	code, body := e.debug("/debug/adsz", debugAdminToken(t, e.wf))
	if code != http.StatusOK {
		t.Fatalf("adsz as admin: %d %s", code, body)
	}
	var az debugapi.Adsz
	e.must(json.Unmarshal([]byte(body), &az))
	ids := map[string]string{}
	for _, p := range az.Proxies {
		ids[p.Pod] = p.Identity
	}
	if want := "ns/" + e.ns + "/sa/gateway (token)"; ids["gw-token"] != want {
		t.Errorf("adsz identity of gw-token = %q, want %q", ids["gw-token"], want)
	}
	if want := "ns/" + e.ns + "/sa/gateway-cert (certificate)"; ids["gw-cert"] != want {
		t.Errorf("adsz identity of gw-cert = %q, want %q", ids["gw-cert"], want)
	}
	if _, ok := ids["gw-none"]; ok {
		t.Error("a refused stream shows in adsz")
	}
}

// Debug endpoints in Kubernetes mode: 401 without a valid token; a
// namespace's ServiceAccount sees only its own proxies in adsz, syncz and
// config_dump and nothing else; a debug admin sees everything; metrics and
// readiness stay open.
func TestDebugEndpointsNeedTokens(t *testing.T) {
	e := newSecureEnv(t)
	aud := []string{"wayfinder"}
	mine, err := e.dial(e.ns, "gw-mine", e.c.Token(t, e.ns, "gateway", aud, time.Hour), nil)
	e.must(err)
	theirs, err := e.dial(e.other, "gw-theirs", e.c.Token(t, e.other, "gateway", aud, time.Hour), nil)
	e.must(err)
	for _, c := range []*adsc.Client{mine, theirs} {
		waitFor(t, c, "config", func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
	}
	tenant := e.c.Token(t, e.ns, "viewer", nil, time.Hour)
	admin := debugAdminToken(t, e.wf)
	mineID := url.QueryEscape(adsc.NodeID(adsc.NodeOptions{IP: "127.0.0.1", PodName: "gw-mine", Namespace: e.ns}))
	theirID := url.QueryEscape(adsc.NodeID(adsc.NodeOptions{IP: "127.0.0.1", PodName: "gw-theirs", Namespace: e.other}))

	for _, tc := range []struct {
		path, token string
		code        int
	}{
		{"/debug/adsz", "", http.StatusUnauthorized},
		{"/debug/configz", "not-a-token", http.StatusUnauthorized},
		{"/debug/pprof/", "", http.StatusUnauthorized},
		// A token for another audience is not a debug token.
		{"/debug/adsz", e.c.Token(t, e.ns, "viewer", aud, time.Hour), http.StatusUnauthorized},
		{"/debug/configz", tenant, http.StatusForbidden},
		{"/debug/list", tenant, http.StatusForbidden},
		{"/debug/pprof/", tenant, http.StatusForbidden},
		{"/debug/pprof/cmdline", tenant, http.StatusForbidden},
		{"/debug/config_dump?proxyID=" + theirID, tenant, http.StatusForbidden},
		{"/debug/config_dump?proxyID=" + mineID, tenant, http.StatusOK},
		{"/debug/adsz", tenant, http.StatusOK},
		{"/debug/syncz", tenant, http.StatusOK},
		{"/debug/configz", admin, http.StatusOK},
		// Only the server's own namespace and named ServiceAccounts are
		// admins: kube-system and istio-system are not, by default.
		{"/debug/configz", e.c.Token(t, "kube-system", "wayfinder-debug", nil, time.Hour), http.StatusForbidden},
		{"/debug/pprof/", e.c.Token(t, "kube-system", "wayfinder-debug", nil, time.Hour), http.StatusForbidden},
		{"/debug/configz", e.c.Token(t, "kube-system", "named-admin", nil, time.Hour), http.StatusOK},
		{"/debug/pprof/", admin, http.StatusOK},
		{"/debug/config_dump?proxyID=" + theirID, admin, http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/healthz/ready", "", http.StatusOK},
	} {
		if code, body := e.debug(tc.path, tc.token); code != tc.code {
			t.Errorf("GET %s with token %.8s...: %d, want %d: %s", tc.path, tc.token, code, tc.code, body)
		}
	}

	proxies := func(path, token string) []string {
		_, body := e.debug(path, token)
		var v struct {
			Proxies []struct {
				ID string `json:"id"`
			} `json:"proxies"`
		}
		e.must(json.Unmarshal([]byte(body), &v))
		var out []string
		for _, p := range v.Proxies {
			out = append(out, p.ID)
		}
		return out
	}
	for _, path := range []string{"/debug/adsz", "/debug/syncz"} {
		got := proxies(path, tenant)
		if len(got) != 1 || !strings.Contains(got[0], "gw-mine."+e.ns) {
			t.Errorf("%s for %s's ServiceAccount lists %v, want only gw-mine", path, e.ns, got)
		}
		if got := proxies(path, admin); len(got) != 2 {
			t.Errorf("%s for a debug admin lists %v, want both proxies", path, got)
		}
	}
}
