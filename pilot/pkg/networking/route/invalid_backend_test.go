package route

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// The Gateway API's share of invalid backends names the absent cluster
// and makes Envoy answer it with a 500, with no warning about the host;
// the valid backend keeps its weight, and routes without the host keep
// Envoy's default (503) for a missing cluster.
func TestInvalidBackendShare(t *testing.T) {
	r := oneRoute(t, `name: r
    route:
    - {destination: {host: reviews.default.svc.cluster.local}, weight: 3}
    - {destination: {host: `+model.InvalidBackendHost+`}, weight: 1}`)
	if err := r.ValidateAll(); err != nil {
		t.Fatalf("route fails validation: %v", err)
	}
	a := r.GetRoute()
	if a.GetClusterNotFoundResponseCode() != routev3.RouteAction_INTERNAL_SERVER_ERROR {
		t.Errorf("cluster_not_found_response_code = %v, want INTERNAL_SERVER_ERROR", a.GetClusterNotFoundResponseCode())
	}
	protoEqual(t, "clusters", &routev3.RouteAction{ClusterSpecifier: a.GetClusterSpecifier()},
		&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
			{Name: "outbound|9080||reviews.default.svc.cluster.local", Weight: wrapperspb.UInt32(3)},
			{Name: model.InvalidBackendCluster, Weight: wrapperspb.UInt32(1)},
		}}}})

	plain := oneRoute(t, `name: r
    route:
    - {destination: {host: reviews.default.svc.cluster.local}, weight: 3}
    - {destination: {host: ratings.default.svc.cluster.local}, weight: 1}`)
	if got := plain.GetRoute().GetClusterNotFoundResponseCode(); got != routev3.RouteAction_SERVICE_UNAVAILABLE {
		t.Errorf("a route without invalid backends has cluster_not_found_response_code %v, want the default", got)
	}
}

// A ServiceEntry declaring the reserved host does not capture the share:
// the host is never looked up.
func TestInvalidBackendHostNotLookedUp(t *testing.T) {
	se := `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: squatter, namespace: default}
spec:
  hosts: [` + model.InvalidBackendHost + `]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.9}]
`
	rcs := buildOK(t, fixtures, se, gatewayYAML, vs("v", "[foo.com]", `  - name: r
    route:
    - {destination: {host: reviews.default.svc.cluster.local}, weight: 1}
    - {destination: {host: `+model.InvalidBackendHost+`, port: {number: 80}}, weight: 1}`))
	wc := onlyRoute(t, rcs).GetRoute().GetWeightedClusters().GetClusters()
	if len(wc) != 2 || wc[1].GetName() != model.InvalidBackendCluster {
		t.Errorf("weighted clusters = %v, want the second to be %s", wc, model.InvalidBackendCluster)
	}
}
