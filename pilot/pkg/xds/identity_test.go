package xds

import (
	"context"
	"net"
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// testIdentityHeader carries "NAMESPACE/SERVICEACCOUNT" from a test client
// to testIdentityInterceptor, which stands in for the secure port's
// authenticating interceptor: a stream without it is unauthenticated.
const testIdentityHeader = "x-test-identity"

func testIdentityInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	if v := md.Get(testIdentityHeader); len(v) == 1 {
		ns, sa, _ := strings.Cut(v[0], "/")
		id := &model.Identity{Namespace: ns, ServiceAccount: sa, Method: model.MethodToken}
		return handler(srv, &identityStream{ss, model.WithIdentity(ss.Context(), id)})
	}
	return handler(srv, ss)
}

// identityServer serves h's discovery server on a second gRPC server
// with testIdentityInterceptor.
func identityServer(t *testing.T, h *harness) string {
	t.Helper()
	g := grpc.NewServer(grpc.WaitForHandlers(true), grpc.StreamInterceptor(testIdentityInterceptor))
	h.s.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	t.Cleanup(func() { g.Stop(); <-done })
	return lis.Addr().String()
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }

// withIdentity makes a test client's streams authenticate as ns/sa.
func withIdentity(ns, sa string) grpc.DialOption { return asIdentity(ns + "/" + sa) }

func asIdentity(v string) grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(metadata.AppendToOutgoingContext(ctx, testIdentityHeader, v), desc, cc, method, opts...)
	})
}

func node(id, namespaceMetadata string) *core.Node {
	md := map[string]any{"LABELS": map[string]any{"istio": "ingressgateway"}}
	if namespaceMetadata != "" {
		md["NAMESPACE"] = namespaceMetadata
	}
	s, _ := structpb.NewStruct(md)
	return &core.Node{Id: id, Metadata: s}
}

// The namespace a proxy claims in its node id and in its NAMESPACE
// metadata must be the one it authenticated as; the refusal names both.
// A node id already connected under one identity cannot be joined by a
// stream of another (or of none), and the first proxy keeps being served.
func TestClaimsMustMatchTheVerifiedIdentity(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	addr := identityServer(t, h)

	for _, tc := range []struct {
		what, id, nsMeta string
	}{
		{"node id", "router~10.0.0.1~gw.istio-system~istio-system.svc.cluster.local", ""},
		{"NAMESPACE metadata", "router~10.0.0.1~gw.tenant~tenant.svc.cluster.local", "istio-system"},
		{"node id", "router~10.0.0.1~gw.istio-system~istio-system.svc.cluster.local", "tenant"},
	} {
		c := dial(t, addr, node(tc.id, tc.nsMeta), asIdentity("tenant/gw"))
		c.subscribe(resource.ClusterType)
		err := c.streamError()
		msg := status.Convert(err).Message()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(msg, `"istio-system" (`+tc.what+`)`) || !strings.Contains(msg, `namespace "tenant"`) {
			t.Errorf("%s claiming istio-system as tenant/gw: %v; want PermissionDenied naming the claim (%s) and tenant", tc.id, err, tc.what)
		}
	}

	id := "router~10.0.0.1~gw.tenant~tenant.svc.cluster.local"
	first := dial(t, addr, node(id, "tenant"), asIdentity("tenant/gw"))
	first.syncAll()
	for _, other := range []*adsClient{
		dial(t, addr, node(id, "tenant"), asIdentity("tenant/intruder")),
		dial(t, h.addr, node(id, "tenant")), // the plaintext port: no identity
	} {
		other.subscribe(resource.ClusterType)
		if err := other.streamError(); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "ns/tenant/sa/gw") {
			t.Errorf("a second stream for %s under another identity: %v, want PermissionDenied naming the connected identity", id, err)
		}
	}
	// A second stream of the same identity joins (Envoy reconnecting).
	again := dial(t, addr, node(id, "tenant"), asIdentity("tenant/gw"))
	again.syncAll()

	az := h.s.Adsz(nil)
	if az.TotalProxies != 1 || az.Proxies[0].Identity != "ns/tenant/sa/gw (token)" || len(az.Proxies[0].Streams) != 2 {
		t.Errorf("adsz = %+v, want the one proxy as ns/tenant/sa/gw with its two streams", az)
	}
	// Debug views are per viewer namespace.
	if got := h.s.Adsz(&security.Viewer{Identity: &model.Identity{Namespace: "other"}}).TotalProxies; got != 0 {
		t.Errorf("a viewer of namespace other sees %d proxies", got)
	}
	if got := len(h.s.Syncz(&security.Viewer{Identity: &model.Identity{Namespace: "tenant"}}).Proxies); got != 1 {
		t.Errorf("a viewer of namespace tenant sees %d proxies in syncz, want 1", got)
	}
}

// An unauthenticated client that took a gateway's node id first (on the
// plaintext port) cannot keep the authenticated gateway out: the verified
// stream evicts it and is served.
func TestAuthenticatedStreamEvictsUnauthenticatedSquatter(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	addr := identityServer(t, h)

	id := "router~10.0.0.1~gw.tenant~tenant.svc.cluster.local"
	squatter := dial(t, h.addr, node(id, "tenant"))
	squatter.syncAll()

	gw := dial(t, addr, node(id, "tenant"), asIdentity("tenant/gw"))
	gw.syncAll()

	if err := squatter.streamError(); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "claimed by an authenticated stream") {
		t.Errorf("the unauthenticated stream after an authenticated one claimed its node id: %v, want it closed with PermissionDenied", err)
	}
	az := h.s.Adsz(nil)
	if az.TotalProxies != 1 || az.Proxies[0].Identity != "ns/tenant/sa/gw (token)" || len(az.Proxies[0].Streams) != 1 {
		t.Errorf("adsz = %+v, want the node held by ns/tenant/sa/gw with its one stream", az)
	}
	// The squatter coming back unauthenticated is refused, not the gateway.
	again := dial(t, h.addr, node(id, "tenant"))
	again.subscribe(resource.ClusterType)
	if err := again.streamError(); status.Code(err) != codes.PermissionDenied {
		t.Errorf("unauthenticated reconnect for a node held by a verified identity: %v, want PermissionDenied", err)
	}
}
