package xds

import (
	"slices"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"
)

// mutualCluster originates TLS with a client certificate and a CA fetched
// over SDS, as a DestinationRule credentialName makes it.
func mutualCluster(t *testing.T, name, cert, ca string) *cluster.Cluster {
	t.Helper()
	ctx := &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: cert, SdsConfig: adsSource}},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlsv3.CertificateValidationContext{},
			ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: ca, SdsConfig: adsSource},
		}},
	}}
	a, err := anypb.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := fakeCluster(name)
	// STATIC: no endpoints to fetch, only the secrets.
	c.ClusterDiscoveryType, c.EdsClusterConfig = &cluster.Cluster_Type{Type: cluster.Cluster_STATIC}, nil
	c.TransportSocket = &core.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: a}}
	return c
}

// The certificates clusters fetch for DestinationRule credentials are
// served to a gateway over SDS by name; one no cluster names is not sent;
// a cluster whose CA the gateway's namespace lacks is still sent (Envoy
// waits for it, as with istiod) without making the view inconsistent. As
// the listeners' secrets, they only go to authenticated proxies.
func TestUpstreamSecretsAreServedByName(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.gen.extraClusters = []*cluster.Cluster{
		mutualCluster(t, "outbound|443||partner.example.com", "kubernetes://partner", "kubernetes://partner-cacert"),
		mutualCluster(t, "outbound|443||lost.example.com", "kubernetes://partner", "kubernetes://lost-cacert"),
	}
	h.gen.upstreamSecrets = []*tlsv3.Secret{tlsSecret("kubernetes://partner"), tlsSecret("kubernetes://partner-cacert"), tlsSecret("kubernetes://unused")}
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels, withIdentity("istio-system", "gateway"))
	got := a.syncAll()
	if names := resourceNames(t, got[resource.ClusterType]); !slices.Contains(names, "outbound|443||lost.example.com") {
		t.Errorf("clusters %v: the one waiting for its CA is still sent", names)
	}
	a.subscribe(resource.SecretType, "kubernetes://partner", "kubernetes://partner-cacert", "kubernetes://unused")
	sds := a.next(resource.SecretType)
	if names := resourceNames(t, sds); !slices.Equal(names, []string{"kubernetes://partner", "kubernetes://partner-cacert"}) {
		t.Errorf("secrets %v", names)
	}
	a.ack(sds)
	a.barrier()
	if err := h.snapshot(nodeID("a")).Consistent(); err != nil {
		t.Error(err)
	}

	// Whatever the generator says, a plaintext proxy gets none.
	b := h.connect(nodeID("b"), ingressLabels)
	b.syncAll()
	b.subscribe(resource.SecretType, "kubernetes://partner", "kubernetes://partner-cacert")
	if sds := b.next(resource.SecretType); len(sds.GetResources()) != 0 {
		t.Errorf("unauthenticated proxy was sent %d upstream secrets", len(sds.GetResources()))
	}
	if v := h.snapshot(nodeID("b")); len(v.Sets[snapshot.SDS].Items) != 0 {
		t.Errorf("unauthenticated proxy's view holds %d secrets", len(v.Sets[snapshot.SDS].Items))
	}
}

// A DestinationRule credentialName is resolved in each proxy's namespace,
// and sent only to a ServiceAccount the namespace review allows, so it
// puts proxies of different namespaces or ServiceAccounts (and plaintext
// ones) in different gateway groups, while the proxies of one namespace
// and ServiceAccount share one; without such a rule they all share the
// Gateways' group.
func TestDestinationRuleCredentialsSplitGroupsByIdentity(t *testing.T) {
	dr := config.Config{
		Meta: config.Meta{Kind: schema.DestinationRule, Namespace: "default", Name: "reviews", CreationTimestamp: created},
		Spec: &networking.DestinationRule{Host: "reviews.default.svc.cluster.local", TrafficPolicy: &networking.TrafficPolicy{
			Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL, CredentialName: "client"}}},
	}
	id := func(pod, ns string) string {
		return "router~10.0.0.1~" + pod + "." + ns + "~" + ns + ".svc.cluster.local"
	}
	proxies := []struct {
		id, ns string
		opts   []grpc.DialOption
	}{
		{id("sys-a", "istio-system"), "istio-system", []grpc.DialOption{withIdentity("istio-system", "a")}},
		{id("sys-a2", "istio-system"), "istio-system", []grpc.DialOption{withIdentity("istio-system", "a")}},
		{id("sys-b", "istio-system"), "istio-system", []grpc.DialOption{withIdentity("istio-system", "b")}},
		{id("gw", "tenant"), "tenant", []grpc.DialOption{withIdentity("tenant", "a")}},
		{id("plain", "istio-system"), "istio-system", nil},
	}
	groups := func(cfgs []config.Config) []string {
		h := newHarness(t, newTestStore(cfgs...))
		h.syncAndWait()
		for _, p := range proxies {
			dial(t, h.addr, node(p.id, p.ns), p.opts...).syncAll()
		}
		byID := map[string]string{}
		for _, p := range h.s.Adsz(nil).Proxies {
			byID[p.ID] = p.GatewayGroup
		}
		out := make([]string, len(proxies))
		for i, p := range proxies {
			out[i] = byID[p.id]
		}
		return out
	}
	// tenant's gateway has its own group all the same: istiod's default
	// tracing tags the spans with the proxy's namespace.
	if g := groups(base()); g[0] == "" || g[0] != g[1] || g[0] != g[2] || g[0] == g[3] || g[0] != g[4] {
		t.Errorf("without credentials the proxies' groups are %q, want one for istio-system, one for tenant", g)
	}
	g := groups(append(base(), dr))
	if g[0] == "" || g[0] != g[1] || len(slices.Compact(slices.Sorted(slices.Values(g)))) != 4 {
		t.Errorf("groups with a DestinationRule credential: %q; want the two proxies of istio-system/a together, istio-system/b, tenant and plaintext apart", g)
	}
}
