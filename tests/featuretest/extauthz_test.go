package featuretest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// authorizer is a real Envoy external authorization service: it allows
// requests whose path starts with /public and denies the others.
type authorizer struct {
	authv3.UnimplementedAuthorizationServer
}

func (authorizer) Check(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	code := codes.PermissionDenied
	if strings.HasPrefix(req.GetAttributes().GetRequest().GetHttp().GetPath(), "/public") {
		code = codes.OK
	}
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(code)}}, nil
}

// extAuthzFilter is the ext_authz HTTP filter of listener 0.0.0.0_80.
func extAuthzFilter(s adsc.State) *extauthzv3.ExtAuthz {
	for _, f := range gatewayHCM(s).GetHttpFilters() {
		ea := &extauthzv3.ExtAuthz{}
		if f.GetName() == "envoy.filters.http.ext_authz" && f.GetTypedConfig().UnmarshalTo(ea) == nil {
			return ea
		}
	}
	return nil
}

// A CUSTOM AuthorizationPolicy naming the mesh config's gRPC ext_authz
// provider puts the ext_authz filter on the gateway, after the RBAC
// filter that marks what it checks, naming a cluster the gateway is also
// served, whose endpoint is a real authorization server on 127.0.0.1:
// Check calls made as Envoy's filter would make them (its authority,
// timeout) are answered, allowed and denied.
func TestCustomPolicyReachesRealAuthorizer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, authorizer{})
	go srv.Serve(lis) //nolint:errcheck // Serve returns when Stop is called
	t.Cleanup(srv.Stop)
	port := uint32(lis.Addr().(*net.TCPAddr).Port)
	const host = "authz.istio-system.svc.cluster.local"
	cluster := fmt.Sprintf("outbound|%d||%s", port, host)

	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: authz, namespace: istio-system}
spec:
  hosts: [%[2]s]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: %[1]d, name: grpc, protocol: GRPC}]
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: CUSTOM
  provider: {name: opa}
  rules:
  - to: [{operation: {paths: ["/admin*", "/public*"]}}]
`, port, host))
	meshFile := filepath.Join(t.TempDir(), "mesh")
	serverenv.WriteFile(t, meshFile, fmt.Sprintf(`
extensionProviders:
- name: opa
  envoyExtAuthzGrpc:
    service: %s
    port: %d
    timeout: 2s
`, host, port))
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, MeshConfigFile: meshFile})
	gw := e.gateway("ingress", publicLabels, nil)
	s := waitFor(t, gw, "the ext_authz filter and its cluster", func(s adsc.State) bool {
		ea := extAuthzFilter(s)
		return allACKed(s) && ea != nil && ea.GetGrpcService().GetEnvoyGrpc().GetClusterName() == cluster &&
			s.Clusters[cluster] != nil && endpointAddr(s.Endpoints[cluster]) != ""
	})
	names := filterNames(gatewayHCM(s))
	if len(names) < 2 || names[0] != "envoy.filters.http.rbac" || names[1] != "envoy.filters.http.ext_authz" {
		t.Errorf("HTTP filters %v: want the CUSTOM RBAC, then ext_authz, first", names)
	}
	ea := extAuthzFilter(s)
	addr := endpointAddr(s.Endpoints[cluster])
	if want := fmt.Sprintf("127.0.0.1:%d", port); addr != want {
		t.Fatalf("cluster %s endpoint %s, want the authorizer's %s", cluster, addr, want)
	}

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(ea.GetGrpcService().GetEnvoyGrpc().GetAuthority()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	for path, want := range map[string]codes.Code{"/public/page": codes.OK, "/admin/users": codes.PermissionDenied} {
		ctx, cancel := context.WithTimeout(context.Background(), ea.GetGrpcService().GetTimeout().AsDuration())
		var md []string
		for _, h := range ea.GetGrpcService().GetInitialMetadata() {
			md = append(md, h.GetKey(), h.GetValue())
		}
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
		resp, err := client.Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{Path: path, Method: "GET"}},
		}})
		cancel()
		if err != nil || codes.Code(resp.GetStatus().GetCode()) != want {
			t.Errorf("Check %s: %v, status %v; want %v", path, err, resp.GetStatus(), want)
		}
	}
	if ea.GetGrpcService().GetTimeout().AsDuration().String() != "2s" {
		t.Errorf("timeout %v, want the provider's 2s", ea.GetGrpcService().GetTimeout())
	}
}
