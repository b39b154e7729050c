package featuretest

import (
	"bytes"
	"context"
	"errors"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/credentials"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
)

// Two HTTPS servers for every istio=ingressgateway proxy: web-cert, which
// each proxy gets from its own namespace, and apps/shop-cert, named with
// its namespace, which a proxy gets only if its ServiceAccount may get it.
const secretsYAML = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}
  - {port: {number: 443, name: https-web, protocol: HTTPS}, hosts: ["*/web.example.com"], tls: {mode: SIMPLE, credentialName: web-cert}}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: shop, namespace: apps}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 443, name: https-shop, protocol: HTTPS}, hosts: ["*/shop.example.com"], tls: {mode: SIMPLE, credentialName: "kubernetes://apps/shop-cert"}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: default}
spec:
  hosts: [web.example.com, shop.example.com]
  gateways: [istio-system/public, apps/shop]
  http:
  - route: [{destination: {host: reviews.default.svc.cluster.local, port: {number: 9080}}}]
---` + servicesYAML

// sarAllowing answers SubjectAccessReviews like RBAC granting get on
// apps/shop-cert to istio-system's ingressgateway ServiceAccount alone.
func sarAllowing(t *testing.T) func(ds *xds.DiscoveryServer) model.SecretAuthorizer {
	return func(ds *xds.DiscoveryServer) model.SecretAuthorizer {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
			ra := sar.Spec.ResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:istio-system:ingressgateway" && ra.Resource == "secrets" &&
				(ra.Verb == "get" && ra.Namespace == "apps" && ra.Name == "shop-cert" || ra.Verb == "list" && ra.Namespace == "istio-system")
			return true, sar, nil
		})
		a, err := credentials.New(credentials.Options{Client: cs.AuthorizationV1().SubjectAccessReviews(), OnChange: func() {
			ds.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"secret": 1}, Start: time.Now()})
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { a.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		// The reviews the gateways below cause, answered before they
		// connect so that their first config is final.
		sys := model.Identity{Namespace: "istio-system", ServiceAccount: "ingressgateway"}
		tenant := model.Identity{Namespace: "tenant", ServiceAccount: "ingressgateway"}
		questions := []func() (bool, string){
			func() (bool, string) { return a.CanListSecrets(sys, "istio-system") },
			func() (bool, string) { return a.CanListSecrets(tenant, "tenant") },
			func() (bool, string) {
				return a.CanGetSecret(tenant, model.SecretRef{Namespace: "tenant", Name: "web-cert"})
			},
		}
		deadline := time.Now().Add(waitTimeout)
		for _, q := range questions {
			for _, reason := q(); strings.Contains(reason, "not answered yet"); _, reason = q() {
				if time.Now().After(deadline) {
					t.Fatal("the authorizer answered nothing")
				}
				goruntime.Gosched()
			}
		}
		return a
	}
}

func tlsSecretOf(t *testing.T, c *rawClient, names ...string) map[string]*tlsv3.Secret {
	t.Helper()
	resp := c.fetch(resource.SecretType, names...)
	out := map[string]*tlsv3.Secret{}
	for _, a := range resp.GetResources() {
		s := &tlsv3.Secret{}
		if err := a.UnmarshalTo(s); err != nil {
			t.Fatal(err)
		}
		out[s.GetName()] = s
	}
	return out
}

// sdsNames are the SDS secrets the listeners' filter chains fetch, by
// listener.
func sdsNames(t *testing.T, c *rawClient) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, a := range c.fetch(resource.ListenerType).GetResources() {
		l := &listenerv3.Listener{}
		if err := a.UnmarshalTo(l); err != nil {
			t.Fatal(err)
		}
		out[l.GetName()] = nil
		for _, fc := range l.GetFilterChains() {
			dt := &tlsv3.DownstreamTlsContext{}
			if fc.GetTransportSocket() == nil || fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(dt) != nil {
				continue
			}
			for _, sds := range dt.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
				out[l.GetName()] = append(out[l.GetName()], sds.GetName())
			}
		}
	}
	return out
}

// A gateway proxy in namespace tenant, labelled istio: ingressgateway and
// selected by istio-system's Gateway, never receives istio-system's key,
// even asking for it by name; istio-system's own gateway, whose
// ServiceAccount may list the Secrets of istio-system, receives its own
// key, and never apps/shop-cert, which a Gateway names with its namespace
// (Istio config names the proxy's namespace's Secrets only), even though
// RBAC lets it get that Secret; a plaintext proxy gets no secret and no
// chain that needs one. Refusals are reported.
func TestGatewaySecretsStayInTheirNamespace(t *testing.T) {
	sysCert, sysKey := readFile(t, "system-cert.pem"), readFile(t, "system-key.pem")
	appCert, appKey := readFile(t, "app-cert.pem"), readFile(t, "app-key.pem")
	s := newSecretServer(t, secretsYAML, map[string][2][]byte{
		"istio-system/web-cert": {sysCert, sysKey},
		"apps/shop-cert":        {appCert, appKey},
	}, sarAllowing(t))

	system := dialRaw(t, s.addr, "ingressgateway-0", "istio-system", "istio-system/ingressgateway", publicLabels)
	system2 := dialRaw(t, s.addr, "ingressgateway-1", "istio-system", "istio-system/ingressgateway", publicLabels)
	tenant := dialRaw(t, s.addr, "ingressgateway-0", "tenant", "tenant/ingressgateway", publicLabels)
	plain := dialRaw(t, s.addr, "plain-0", "istio-system", "", publicLabels)

	// istio-system: its own chain and secret, byte for byte; not apps'.
	if got := sdsNames(t, system); !slices.Equal(got["0.0.0.0_443"], []string{"kubernetes://web-cert"}) {
		t.Fatalf("istio-system gateway's chains fetch %v", got)
	}
	sec := tlsSecretOf(t, system, "kubernetes://web-cert", "kubernetes://apps/shop-cert")
	if c := sec["kubernetes://web-cert"].GetTlsCertificate(); !bytes.Equal(c.GetCertificateChain().GetInlineBytes(), sysCert) || !bytes.Equal(c.GetPrivateKey().GetInlineBytes(), sysKey) {
		t.Error("istio-system's gateway did not receive istio-system/web-cert byte for byte")
	}
	if _, ok := sec["kubernetes://apps/shop-cert"]; ok {
		t.Error("istio-system's gateway received apps/shop-cert, named by a Gateway of apps")
	}
	sdsNames(t, system2)

	// tenant: its own namespace has no web-cert, and it may not get
	// apps/shop-cert: no HTTPS listener at all, and nothing when it asks
	// for the secrets by any name.
	if got := sdsNames(t, tenant); len(got["0.0.0.0_443"]) != 0 || !slices.Contains(mapKeys(got), "0.0.0.0_80") {
		t.Errorf("tenant gateway's listeners %v, want port 80 and no chain fetching a secret", got)
	}
	if got := tlsSecretOf(t, tenant, "kubernetes://web-cert", "kubernetes://istio-system/web-cert", "kubernetes://apps/shop-cert"); len(got) != 0 {
		t.Errorf("tenant gateway received secrets %v", mapKeys(got))
	}

	// plaintext: nothing, whatever it asks.
	if got := sdsNames(t, plain); len(got["0.0.0.0_443"]) != 0 {
		t.Errorf("plaintext proxy's listeners fetch %v", got)
	}
	if got := tlsSecretOf(t, plain, "kubernetes://web-cert", "kubernetes://istio-system/web-cert"); len(got) != 0 {
		t.Errorf("plaintext proxy received secrets %v", mapKeys(got))
	}

	for _, c := range []*rawClient{tenant, plain, system} {
		for _, key := range [][]byte{sysKey, appKey} {
			if c == system && bytes.Equal(key, sysKey) {
				continue
			}
			if bytes.Contains(c.received.Bytes(), key) || bytes.Contains(c.received.Bytes(), key[40:80]) {
				t.Errorf("%s received a private key's bytes", c.id)
			}
		}
	}

	// One translation per namespace and ServiceAccount: both istio-system
	// gateways share a group; tenant and plaintext proxies have their own.
	var sz debugapi.Syncz
	s.get(t, "/debug/syncz", &sz)
	groups := map[string]debugapi.SyncProxy{}
	for _, p := range sz.Proxies {
		groups[p.ID] = p
	}
	if g0, g1 := groups[system.id].GatewayGroup, groups[system2.id].GatewayGroup; g0 == "" || g0 != g1 {
		t.Errorf("istio-system gateways in groups %q and %q, want one", g0, g1)
	}
	if g := groups[tenant.id].GatewayGroup; g == groups[system.id].GatewayGroup || g == groups[plain.id].GatewayGroup {
		t.Errorf("tenant gateway shares group %q", g)
	}
	refusedTo := func(id string) []string {
		var out []string
		for _, r := range groups[id].SecretsRefused {
			out = append(out, r.Secret+": "+r.Reason)
		}
		return out
	}
	if r := refusedTo(tenant.id); len(r) != 2 || !strings.HasPrefix(r[0], "apps/shop-cert: Gateway apps/shop may name Secrets of the proxy's namespace tenant only") ||
		!strings.Contains(r[1], "ServiceAccount tenant/ingressgateway may neither list the Secrets of namespace tenant") {
		t.Errorf("syncz refusals for the tenant gateway %q", r)
	}
	if r := refusedTo(plain.id); len(r) != 2 || !strings.Contains(r[0], "only sent to authenticated proxies") {
		t.Errorf("syncz refusals for the plaintext proxy %q", r)
	}
	if r := refusedTo(system.id); len(r) != 1 || !strings.HasPrefix(r[0], "apps/shop-cert: Gateway apps/shop may name Secrets of the proxy's namespace istio-system only") {
		t.Errorf("syncz refusals for istio-system's gateway %q", r)
	}
	var cz debugapi.Configz
	body := s.get(t, "/debug/configz", &cz)
	found := false
	for _, r := range cz.SecretRefusals {
		if slices.Contains(r.Proxies, tenant.id) && r.Scope == "ns/tenant/sa/ingressgateway" && len(r.Refused) == 2 && r.Refused[0].Resource == "kubernetes://apps/shop-cert" {
			found = true
		}
	}
	if !found {
		t.Errorf("configz secretRefusals %+v lack the tenant gateway's", cz.SecretRefusals)
	}

	// Debug output never carries key material: config_dump shows the
	// secrets as Envoy's admin does.
	dump := s.get(t, "/debug/config_dump?proxyID="+system.id, nil)
	if !strings.Contains(dump, `"inlineString": "[redacted]"`) || !strings.Contains(dump, "kubernetes://web-cert") {
		t.Errorf("config_dump does not show the redacted secrets:\n%s", dump)
	}
	for _, out := range []string{dump, body, s.get(t, "/debug/syncz", nil), s.get(t, "/debug/adsz", nil)} {
		for _, key := range [][]byte{sysKey, appKey} {
			if strings.Contains(out, string(key[40:80])) || strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "LS0tLS1CRUdJTiBQUklWQVRF") {
				t.Error("a debug page shows a private key")
			}
		}
	}
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A SubjectAccessReview that fails refuses the Secret (fail closed) and
// is retried: once the API server answers, the gateway is pushed the
// chain and the secret without any config change.
func TestFailedReviewRefusesThenRetries(t *testing.T) {
	appCert, appKey := readFile(t, "app-cert.pem"), readFile(t, "app-key.pem")
	var mu sync.Mutex
	failing := true
	clk := clocktesting.NewFakeClock(time.Now())
	var authz *credentials.Authorizer
	s := newSecretServer(t, secretsYAML, map[string][2][]byte{"istio-system/web-cert": {appCert, appKey}}, func(ds *xds.DiscoveryServer) model.SecretAuthorizer {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return true, nil, errors.New("the server is currently unable to handle the request")
			}
			sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
			sar.Status.Allowed = true
			return true, sar, nil
		})
		var err error
		authz, err = credentials.New(credentials.Options{Client: cs.AuthorizationV1().SubjectAccessReviews(), Clock: clk, ErrorRetry: 10 * time.Second,
			OnChange: func() {
				ds.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"secret": 1}, Start: time.Now()})
			}})
		if err != nil {
			t.Fatal(err)
		}
		return authz
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { authz.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	gw := dialRaw(t, s.addr, "ingressgateway-0", "istio-system", "istio-system/ingressgateway", publicLabels)
	lds := gw.fetch(resource.ListenerType)
	if names := chainSecrets(t, lds); slices.Contains(names, "kubernetes://web-cert") {
		t.Fatalf("chains fetch %v while the review fails", names)
	}
	var sz debugapi.Syncz
	s.get(t, "/debug/syncz", &sz)
	if len(sz.Proxies) != 1 || len(sz.Proxies[0].SecretsRefused) == 0 || !strings.Contains(sz.Proxies[0].SecretsRefused[len(sz.Proxies[0].SecretsRefused)-1].Reason, "SubjectAccessReview") {
		t.Errorf("syncz %+v, want the Secret refused because the review failed", sz.Proxies)
	}

	mu.Lock()
	failing = false
	mu.Unlock()
	deadline := time.Now().Add(waitTimeout)
	for !clk.HasWaiters() { // the authorizer's refresh ticker
		if time.Now().After(deadline) {
			t.Fatal("the authorizer's refresh loop is not running")
		}
		goruntime.Gosched()
	}
	clk.Step(10 * time.Second)
	lds = gw.ackAndNext(lds)
	if names := chainSecrets(t, lds); !slices.Contains(names, "kubernetes://web-cert") {
		t.Fatalf("after the review succeeded the chains fetch %v", names)
	}
	sec := tlsSecretOf(t, gw, "kubernetes://web-cert")
	if c := sec["kubernetes://web-cert"].GetTlsCertificate(); !bytes.Equal(c.GetPrivateKey().GetInlineBytes(), appKey) {
		t.Error("the gateway did not receive web-cert after the retry")
	}
}

func chainSecrets(t *testing.T, lds *discovery.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range lds.GetResources() {
		l := &listenerv3.Listener{}
		if err := a.UnmarshalTo(l); err != nil {
			t.Fatal(err)
		}
		for _, fc := range l.GetFilterChains() {
			dt := &tlsv3.DownstreamTlsContext{}
			if fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(dt) == nil {
				for _, sds := range dt.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
					out = append(out, sds.GetName())
				}
			}
		}
	}
	return out
}

// A SubjectAccessReview never holds a push: while the API server does
// not answer (the review hangs, with no timeout), gateways of two
// namespaces connect and get their config at once, their TLS servers
// left out as not reviewed yet; once the review answers, the gateway
// whose ServiceAccount may list its namespace's Secrets is pushed its
// chain and secret without any config change.
func TestReviewNeverHoldsAPush(t *testing.T) {
	sysCert, sysKey := readFile(t, "system-cert.pem"), readFile(t, "system-key.pem")
	release := make(chan struct{})
	var once sync.Once
	var authz *credentials.Authorizer
	s := newSecretServer(t, secretsYAML, map[string][2][]byte{"istio-system/web-cert": {sysCert, sysKey}}, func(ds *xds.DiscoveryServer) model.SecretAuthorizer {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
			sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:istio-system:ingressgateway" && sar.Spec.ResourceAttributes.Verb == "list"
			return true, sar, nil
		})
		var err error
		authz, err = credentials.New(credentials.Options{Client: cs.AuthorizationV1().SubjectAccessReviews(), Timeout: time.Hour,
			OnChange: func() {
				ds.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"secret": 1}, Start: time.Now()})
			}})
		if err != nil {
			t.Fatal(err)
		}
		return authz
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { authz.Run(ctx); close(done) }()
	t.Cleanup(func() { once.Do(func() { close(release) }); cancel(); <-done })

	sys := dialRaw(t, s.addr, "ingressgateway-0", "istio-system", "istio-system/ingressgateway", publicLabels)
	lds := sys.fetch(resource.ListenerType)
	if names := chainSecrets(t, lds); slices.Contains(names, "kubernetes://web-cert") {
		t.Fatalf("chains fetch %v before the review answered", names)
	}
	tenant := dialRaw(t, s.addr, "ingressgateway-0", "tenant", "tenant/ingressgateway", publicLabels)
	if tl := tenant.fetch(resource.ListenerType); len(tl.GetResources()) == 0 {
		t.Fatal("a second gateway got no listeners while a review hangs")
	}
	var sz debugapi.Syncz
	s.get(t, "/debug/syncz", &sz)
	for _, p := range sz.Proxies {
		if p.ID == sys.id && (len(p.SecretsRefused) == 0 || !strings.Contains(p.SecretsRefused[len(p.SecretsRefused)-1].Reason, "not answered yet")) {
			t.Errorf("syncz refusals for istio-system's gateway %+v, want the certificate's review pending", p.SecretsRefused)
		}
	}

	once.Do(func() { close(release) })
	lds = sys.ackAndNext(lds)
	if names := chainSecrets(t, lds); !slices.Contains(names, "kubernetes://web-cert") {
		t.Fatalf("after the review answered the chains fetch %v", names)
	}
	sec := tlsSecretOf(t, sys, "kubernetes://web-cert")
	if c := sec["kubernetes://web-cert"].GetTlsCertificate(); !bytes.Equal(c.GetPrivateKey().GetInlineBytes(), sysKey) {
		t.Error("the gateway did not receive web-cert once reviewed")
	}
}
