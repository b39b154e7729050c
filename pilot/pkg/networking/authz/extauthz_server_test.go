package authz_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extauthztcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	networking "istio.io/api/networking/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authz"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

// checkServer is a real Envoy ext_authz gRPC Authorization service: it
// allows a request whose x-user header is alice, holds one whose x-user is
// slow until the caller gives up, and denies anything else with 403. It
// hands the :authority of every call to authorities.
type checkServer struct {
	authv3.UnimplementedAuthorizationServer
	authorities chan string
}

func (s *checkServer) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get(":authority"); len(a) == 1 {
		s.authorities <- a[0]
	} else {
		s.authorities <- ""
	}
	switch req.GetAttributes().GetRequest().GetHttp().GetHeaders()["x-user"] {
	case "alice":
		return &authv3.CheckResponse{
			Status:       &rpcstatus.Status{Code: int32(codes.OK)},
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{}},
		}, nil
	case "slow":
		// Answer only once the caller's deadline (the filter's timeout)
		// has passed: the call must fail on the caller's side first.
		<-ctx.Done()
		return nil, ctx.Err()
	default:
		return &authv3.CheckResponse{
			Status: &rpcstatus.Status{Code: int32(codes.PermissionDenied)},
			HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
				Body:   "denied by the test authorizer",
			}},
		}, nil
	}
}

// startCheckServer serves the Authorization service on 127.0.0.1 and
// returns its port.
func startCheckServer(t *testing.T) (*checkServer, uint32) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	cs := &checkServer{authorities: make(chan string, 16)}
	authv3.RegisterAuthorizationServer(srv, cs)
	go srv.Serve(lis) //nolint:errcheck // Serve returns when Stop is called
	t.Cleanup(srv.Stop)
	return cs, uint32(lis.Addr().(*net.TCPAddr).Port)
}

// resolveCluster is the address an Envoy would connect to for cluster
// name: the first endpoint of its load assignment, inline (STATIC) or
// from EDS, and whether the cluster speaks HTTP/2 upstream, which gRPC
// needs.
func resolveCluster(t *testing.T, svc core.ServiceResources, eps core.EndpointResources, name string) (addr string, h2 bool) {
	t.Helper()
	var c *clusterv3.Cluster
	for _, have := range svc.Clusters {
		if have.GetName() == name {
			c = have
		}
	}
	if c == nil {
		t.Fatalf("the cluster translator built no cluster %s", name)
	}
	if err := c.ValidateAll(); err != nil {
		t.Errorf("cluster %s: %v", name, err)
	}
	opts := &httpv3.HttpProtocolOptions{}
	if a := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; a != nil && a.UnmarshalTo(opts) == nil {
		h2 = opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil || opts.GetUseDownstreamProtocolConfig().GetHttp2ProtocolOptions() != nil
	}
	cla := c.GetLoadAssignment()
	if c.GetType() == clusterv3.Cluster_EDS {
		edsName := c.GetEdsClusterConfig().GetServiceName()
		if edsName == "" {
			edsName = name
		}
		cla = nil
		for _, e := range eps.Endpoints {
			if e.GetClusterName() == edsName {
				cla = e
			}
		}
	}
	for _, le := range cla.GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			return fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()), h2
		}
	}
	t.Fatalf("cluster %s (%s) resolves to no endpoint", name, c.GetType())
	return "", false
}

// checkCall makes Check calls as Envoy's ext_authz filter does with
// grpc_service gs: to the address the cluster resolves to, with the
// service's authority, its timeout as the call's deadline and its
// initial metadata as headers.
type checkCall struct {
	client authv3.AuthorizationClient
	gs     *corev3.GrpcService
}

func dialCheck(t *testing.T, addr string, gs *corev3.GrpcService) checkCall {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(gs.GetEnvoyGrpc().GetAuthority()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return checkCall{client: authv3.NewAuthorizationClient(conn), gs: gs}
}

func (c checkCall) check(user string) (*authv3.CheckResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.gs.GetTimeout().AsDuration())
	defer cancel()
	for _, h := range c.gs.GetInitialMetadata() {
		ctx = metadata.AppendToOutgoingContext(ctx, h.GetKey(), h.GetValue())
	}
	return c.client.Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Path: "/admin", Host: "bookinfo.example.com", Headers: map[string]string{"x-user": user},
		}},
	}})
}

// An envoyExtAuthzGrpc provider whose service is a ServiceEntry for a
// real Authorization server on 127.0.0.1 gives ext_authz filters (HTTP and
// network) naming the cluster outbound|PORT||HOST; the real cluster and
// endpoint translators build that cluster, HTTP/2, with the server's
// address as endpoint; and Check calls made as Envoy makes them from the
// filters' grpc_service (authority, timeout, initial metadata) reach the
// server: alice is allowed, bob denied with 403, and a check the server
// does not answer within the provider's timeout fails with
// DeadlineExceeded (where the filter then applies failOpen and
// statusOnError).
func TestExtAuthzGRPCProviderReachesRealServer(t *testing.T) {
	srv, port := startCheckServer(t)
	const host = "ext-authz.auth.svc.cluster.local"
	cluster := fmt.Sprintf("outbound|%d||%s", port, host)
	meshCfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), fmt.Appendf(nil, `
extensionProviders:
- name: ext-authz
  envoyExtAuthzGrpc:
    service: auth/%s
    port: %d
    timeout: 0.5s
    statusOnError: "503"
`, host, port))
	if err != nil {
		t.Fatal(err)
	}
	se := objects.New(schema.ServiceEntry, "auth", "ext-authz", &networking.ServiceEntry{
		Hosts:      []string{host},
		Location:   networking.ServiceEntry_MESH_INTERNAL,
		Resolution: networking.ServiceEntry_STATIC,
		Ports:      []*networking.ServicePort{{Number: port, Name: "grpc", Protocol: "GRPC"}},
		Endpoints:  []*networking.WorkloadEntry{{Address: "127.0.0.1"}},
	})
	push := model.NewScopedPushContext(model.Scoping{Mesh: meshCfg}, memory.New([]config.Config{se}))
	if len(push.Errors) != 0 {
		t.Fatalf("push errors: %v", push.Errors)
	}
	proxy := &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	view := push.ForProxy(proxy)

	provider, err := meshCfg.Provider("ext-authz")
	if err != nil {
		t.Fatal(err)
	}
	httpFilter, tcpFilter, err := authz.ExtAuthzFiltersForTest(provider, authz.ProviderClusters(view))
	if err != nil {
		t.Fatal(err)
	}
	httpCfg := &extauthzhttpv3.ExtAuthz{}
	if err := httpFilter.GetTypedConfig().UnmarshalTo(httpCfg); err != nil {
		t.Fatal(err)
	}
	tcpCfg := &extauthztcpv3.ExtAuthz{}
	if tcpFilter == nil || tcpFilter.GetTypedConfig().UnmarshalTo(tcpCfg) != nil {
		t.Fatalf("no network ext_authz filter for a gRPC provider: %v", tcpFilter)
	}
	if got := httpCfg.GetStatusOnError().GetCode(); got != typev3.StatusCode_ServiceUnavailable {
		t.Errorf("status_on_error %v, want the provider's 503", got)
	}

	gen := core.DefaultGenerator{}
	services := gen.BuildServices(view)
	endpoints := gen.BuildEndpoints(view)
	if len(services.Errors) != 0 || len(endpoints.Errors) != 0 {
		t.Fatalf("translation errors: %v %v", services.Errors, endpoints.Errors)
	}
	for name, gs := range map[string]*corev3.GrpcService{"http": httpCfg.GetGrpcService(), "tcp": tcpCfg.GetGrpcService()} {
		t.Run(name, func(t *testing.T) {
			if got := gs.GetEnvoyGrpc().GetClusterName(); got != cluster {
				t.Fatalf("cluster %q, want %q", got, cluster)
			}
			if got := gs.GetTimeout().AsDuration(); got != 500*time.Millisecond {
				t.Errorf("timeout %v, want the provider's 0.5s", got)
			}
			addr, h2 := resolveCluster(t, services, endpoints, cluster)
			if want := fmt.Sprintf("127.0.0.1:%d", port); addr != want {
				t.Fatalf("cluster %s endpoint %s, want the authorizer's %s", cluster, addr, want)
			}
			if !h2 {
				t.Error("the authorizer's cluster does not speak HTTP/2; Envoy's gRPC client needs it")
			}
			call := dialCheck(t, addr, gs)

			resp, err := call.check("alice")
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetStatus().GetCode() != int32(codes.OK) || resp.GetOkResponse() == nil {
				t.Errorf("alice: %v, want allowed", resp)
			}
			if a := <-srv.authorities; a != host {
				t.Errorf("authority %q, want the service's hostname %q", a, host)
			}

			resp, err = call.check("bob")
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetStatus().GetCode() != int32(codes.PermissionDenied) || resp.GetDeniedResponse().GetStatus().GetCode() != typev3.StatusCode_Forbidden {
				t.Errorf("bob: %v, want denied with 403", resp)
			}
			<-srv.authorities

			_, err = call.check("slow")
			if status.Code(err) != codes.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("slow: %v, want the provider's timeout to end the call", err)
			}
			<-srv.authorities
		})
	}

	// The same provider with a port the ServiceEntry lacks has no cluster:
	// buildExtAuthz refuses it (the CUSTOM policy then denies) rather than
	// naming a cluster Envoy does not have.
	wrong, err := mesh.Parse(mesh.FileSource("mesh.yaml"), fmt.Appendf(nil,
		"extensionProviders:\n- {name: ext-authz, envoyExtAuthzGrpc: {service: auth/%s, port: %d}}\n", host, port+1))
	if err != nil {
		t.Fatal(err)
	}
	p, err := wrong.Provider("ext-authz")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := authz.ExtAuthzFiltersForTest(p, authz.ProviderClusters(view)); err == nil {
		t.Error("a provider port the service lacks built filters")
	}
}

// ProviderClusters follows istiod's LookupCluster against the proxy's
// view: "ns/host" must be that namespace's service, "host" any visible
// one; a service the gateway's namespace cannot see (exportTo) or a port
// it lacks resolves to nothing, so the CUSTOM policy denies rather than
// naming a cluster the gateway is not sent.
func TestExtAuthzProviderClusters(t *testing.T) {
	hidden := objects.ServiceEntry("team", "private", "private.team.svc.cluster.local", 9000, "127.0.0.2")
	hidden.Spec.(*networking.ServiceEntry).ExportTo = []string{"."}
	store := memory.New([]config.Config{
		objects.ServiceEntry("auth", "opa", "opa.auth.svc.cluster.local", 9191, "127.0.0.1"),
		hidden,
	})
	push := model.NewScopedPushContext(model.Scoping{}, store)
	view := push.ForProxy(&model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}})
	resolve := authz.ProviderClusters(view)
	for _, tc := range []struct {
		service string
		port    uint32
		want    string // cluster, or "error: " and a part of the message
	}{
		{"opa.auth.svc.cluster.local", 9191, "outbound|9191||opa.auth.svc.cluster.local"},
		{"auth/opa.auth.svc.cluster.local", 9191, "outbound|9191||opa.auth.svc.cluster.local"},
		{"other/opa.auth.svc.cluster.local", 9191, "error: could not find service other/opa.auth.svc.cluster.local"},
		{"opa.auth.svc.cluster.local", 9000, "error: has no port 9000"},
		{"team/private.team.svc.cluster.local", 9000, "error: could not find service"},
		{"missing.example.com", 80, "error: could not find service missing.example.com"},
		{"", 80, "error: must not be empty"},
	} {
		got, err := resolve(tc.service, tc.port)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tc.want && !(len(tc.want) > 7 && tc.want[:7] == "error: " && err != nil && strings.Contains(got, tc.want[7:])) {
			t.Errorf("%s:%d resolves to %q, want %q", tc.service, tc.port, got, tc.want)
		}
	}
}
