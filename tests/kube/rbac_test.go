package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"k8s.io/client-go/rest"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wayfinder-dev/wayfinder/manifests"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// --watch-namespaces naming a namespace the RBAC forbids: the server
// still becomes ready and serves the allowed namespace, reports the
// refusal naming namespace and resource, and picks the namespace up once
// access is granted, without restarting.
func TestForbiddenNamespaceIsReportedAndAllowedOnesServed(t *testing.T) {
	c, allowed := newCluster(t, "allowed")
	forbidden := c.Namespace(t, "forbidden")
	c.AllowRestricted(t, allowed)
	e := clientEnv(t, c, allowed)
	other := &env{t: t, c: c, ns: forbidden, kube: e.kube, istio: e.istio}
	e.createGateway("gw")
	e.createVS(e.virtualService("ok", "ok.example.com", "x.example.com", ""))
	other.createVS(other.virtualService("hidden", "hidden.example.com", "x.example.com", ""))
	other.createGateway("gw")

	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.RestrictedKubeconfig(), WatchNamespaces: []string{allowed, forbidden}})
	gw := e.gateway("gw-0")
	waitFor(t, gw, "the allowed namespace's config", func(s adsc.State) bool { return virtualHost(s, "ok.example.com", "") })
	if virtualHost(gw.State(), "hidden.example.com", "") {
		t.Fatal("config from the forbidden namespace is served")
	}

	errs := e.server.Store().(model.ConfigErrorReporter).ConfigErrors()
	var named []string
	for _, err := range errs {
		msg := err.Error()
		if strings.Contains(msg, `namespace "`+forbidden+`"`) && strings.Contains(msg, "cannot list/watch") {
			named = append(named, msg)
		}
	}
	for _, res := range []string{"gateways.networking.istio.io", "virtualservices.networking.istio.io", "destinationrules.networking.istio.io",
		"serviceentries.networking.istio.io", "telemetries.telemetry.istio.io", "requestauthentications.security.istio.io",
		"authorizationpolicies.security.istio.io", "envoyfilters.networking.istio.io", "services", "endpointslices.discovery.k8s.io", "pods"} {
		found := false
		for _, m := range named {
			found = found || strings.Contains(m, "cannot list/watch "+res+" in namespace")
		}
		if !found {
			t.Errorf("no error names %s in namespace %s; errors: %v", res, forbidden, errs)
		}
	}

	// Granting access later is picked up without a restart.
	c.AllowRestricted(t, forbidden)
	waitFor(t, gw, "the namespace once allowed", func(s adsc.State) bool { return virtualHost(s, "hidden.example.com", "") })
	for _, err := range e.server.Store().(model.ConfigErrorReporter).ConfigErrors() {
		if msg := err.Error(); strings.Contains(msg, "cannot list/watch virtualservices.networking.istio.io in namespace \""+forbidden) {
			t.Errorf("refusal still reported after access was granted and objects arrived: %s", msg)
		}
	}
}

// Wayfinder running as the ServiceAccount of manifests/base, with exactly
// that RBAC: it creates its CA Secret and root-cert ConfigMap, reviews a
// gateway's token (TokenReview) and a debug caller's, and serves the
// gateway over TLS. This is the RBAC the secure port needs, checked by the
// real authorizer rather than read from the YAML.
func TestManifestRBACSuffices(t *testing.T) {
	c, ns := newCluster(t, "rbac-sa")
	cfg := asManifestServiceAccount(t, c)

	e := clientEnv(t, c, ns)
	var err error
	e.createGateway("gw")
	e.createVS(e.virtualService("ok", "ok.example.com", "x.example.com", ""))
	// The authorizer learns new bindings a moment after they are stored:
	// the first start may be refused; a refusal that persists fails.
	var s *bootstrap.Server
	pctx, pcancel := contextWithTimeout()
	defer pcancel()
	_ = wait.PollUntilContextCancel(pctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		s, err = bootstrap.NewServer(bootstrap.Options{KubeRESTConfig: cfg, WatchNamespaces: []string{ns}, PodNamespace: manifestNamespace,
			GRPCAddr: "", HTTPAddr: "127.0.0.1:0", Logger: serverenv.Logger(t, slog.LevelInfo),
			Security: bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"}})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("as %s/pilot-discovery with the manifests' RBAC: %v", manifestNamespace, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("not ready")
	}
	if s.GRPCAddr() != nil {
		t.Error("plaintext ADS is served in Kubernetes mode without --grpc-addr")
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.RootCertPEM()) {
		t.Fatal("no root certificate")
	}
	dctx, dcancel := contextWithTimeout()
	defer dcancel()
	gw, err := adsc.Dial(dctx, adsc.Config{
		Address: s.SecureGRPCAddr().String(),
		Node:    adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: "gw-0", Namespace: ns, Labels: map[string]string{"istio": "ingressgateway"}}),
		TLS:     &tls.Config{RootCAs: pool, ServerName: "pilot-discovery." + manifestNamespace + ".svc.cluster.local"},
		Token:   c.Token(t, ns, "gateway", []string{"istio-ca"}, time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	waitFor(t, gw, "config over TLS", func(st adsc.State) bool { return virtualHost(st, "ok.example.com", "") })

	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr().String()+"/debug/configz", nil)
	e.must(err)
	req.Header.Set("Authorization", "Bearer "+c.Token(t, manifestNamespace, "operator", nil, time.Hour))
	resp, err := http.DefaultClient.Do(req)
	e.must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("configz for a ServiceAccount of Wayfinder's own namespace: %d, want 200", resp.StatusCode)
	}
}

// asManifestServiceAccount applies manifests/base to c and returns a
// client config that acts as its pilot-discovery ServiceAccount (a real
// token from TokenRequest), so what the server does with it is checked by
// the real authorizer against exactly the manifests' RBAC.
func asManifestServiceAccount(t *testing.T, c *apiserver.Cluster) *rest.Config {
	t.Helper()
	docs, err := manifests.Base()
	if err != nil {
		t.Fatal(err)
	}
	var raw [][]byte
	for _, d := range docs {
		raw = append(raw, d.YAML)
	}
	actx, cancel := contextWithTimeout()
	defer cancel()
	if _, err := c.Apply(actx, apiserver.ApplyOptions{}, raw...); err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig()
	cfg.BearerToken = c.Token(t, manifestNamespace, "pilot-discovery", nil, time.Hour)
	return cfg
}

// manifestNamespace is where manifests/base installs Wayfinder.
const manifestNamespace = "wayfinder-system"
