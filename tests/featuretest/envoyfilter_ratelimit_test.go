package featuretest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	ratelimitfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// rateLimitService is a real Envoy rate limit service: it allows the
// first `limit` requests of a descriptor and limits the rest.
type rateLimitService struct {
	rlsv3.UnimplementedRateLimitServiceServer
	limit int64
	calls atomic.Int64
}

func (s *rateLimitService) ShouldRateLimit(_ context.Context, _ *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	code := rlsv3.RateLimitResponse_OK
	if s.calls.Add(1) > s.limit {
		code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	return &rlsv3.RateLimitResponse{OverallCode: code}, nil
}

// Istio's global rate limit recipe: the ratelimit filter before the
// router, and the rate limit service's cluster added by a CLUSTER ADD
// patch. The gateway gets the filter and the added cluster (its own
// cluster set, beside the shared ones), whose endpoint is a real rate
// limit service on 127.0.0.1 that answers as Envoy's filter would ask.
func TestGlobalRateLimitRecipeReachesRealService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rls := &rateLimitService{limit: 1}
	rlsv3.RegisterRateLimitServiceServer(srv, rls)
	go srv.Serve(lis) //nolint:errcheck // Serve returns when Stop is called
	t.Cleanup(srv.Stop)
	port := lis.Addr().(*net.TCPAddr).Port

	files := baseFiles()
	files["ratelimit.yaml"] = fmt.Sprintf(`
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: filter-ratelimit, namespace: istio-system}
spec:
  workloadSelector: {labels: {istio: ingressgateway}}
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: GATEWAY
      listener:
        filterChain:
          filter:
            name: envoy.filters.network.http_connection_manager
            subFilter: {name: envoy.filters.http.router}
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.ratelimit
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit
          domain: ratelimit
          failure_mode_deny: true
          timeout: 10s
          rate_limit_service:
            grpc_service: {envoy_grpc: {cluster_name: rate_limit_cluster}}
            transport_api_version: V3
  - applyTo: CLUSTER
    match: {context: GATEWAY}
    patch:
      operation: ADD
      value:
        name: rate_limit_cluster
        type: STATIC
        connect_timeout: 10s
        lb_policy: ROUND_ROBIN
        http2_protocol_options: {}
        load_assignment:
          cluster_name: rate_limit_cluster
          endpoints:
          - lb_endpoints:
            - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, port)
	e := newEnv(t, files)
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "the ratelimit filter and the rate limit service's cluster", func(s adsc.State) bool {
		return allACKed(s) && slices.Contains(filterNames(gatewayHCM(s)), "envoy.filters.http.ratelimit") &&
			s.Clusters["rate_limit_cluster"] != nil
	})
	var rl *ratelimitfilterv3.RateLimit
	for _, f := range gatewayHCM(s).GetHttpFilters() {
		m := &ratelimitfilterv3.RateLimit{}
		if f.GetName() == "envoy.filters.http.ratelimit" && f.GetTypedConfig().UnmarshalTo(m) == nil {
			rl = m
		}
	}
	cluster := rl.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName()
	added := s.Clusters[cluster]
	if added == nil || added.GetType() != clusterv3.Cluster_STATIC {
		t.Fatalf("the filter names cluster %q, which the gateway has not: %v", cluster, added)
	}
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") || len(s.Clusters) < 2 {
		t.Errorf("the translated clusters and routes are lost beside the added cluster: %s", describe(s))
	}
	sa := added.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	conn, err := grpc.NewClient(fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	var codes []rlsv3.RateLimitResponse_Code
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), rl.GetTimeout().AsDuration())
		resp, err := client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: rl.GetDomain()})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.GetOverallCode())
	}
	if !slices.Equal(codes, []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT}) {
		t.Errorf("rate limit answers %v, want OK then OVER_LIMIT", codes)
	}
}
