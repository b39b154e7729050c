package featuretest

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// suffixFiles is a config folder for a cluster whose domain is
// example.internal: the services are ServiceEntries under that suffix,
// and every route names them by short name only.
const suffixFiles = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.example.internal]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.11, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: default}
spec:
  hosts: [db.default.svc.example.internal]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: 127.0.0.21}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}
  - {port: {number: 31400, name: tcp, protocol: TCP}, hosts: ["*/*"]}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bookinfo, namespace: default}
spec:
  hosts: [bookinfo.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: reviews, subset: v1, port: {number: 9080}}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db, namespace: default}
spec:
  hosts: ["*"]
  gateways: [istio-system/public]
  tcp:
  - match: [{port: 31400}]
    route: [{destination: {host: db}}]
`

// With --domain-suffix example.internal, short host names complete to
// NAME.NAMESPACE.svc.example.internal in every translator and converter:
// a VirtualService's HTTP and TCP destinations, a DestinationRule's host
// (its subset is found) and an HTTPRoute's backendRef all reach their
// services' clusters, and nothing is reported missing.
func TestDomainSuffix(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, dir+"/config.yaml", suffixFiles)
	serverenv.WriteFile(t, dir+"/gwapi.yaml", gatewayAPIYAML+"---\n"+httpRouteYAML("shop", "/api"))
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, DomainSuffix: "example.internal"})

	const (
		reviewsV1 = "outbound|9080|v1|reviews.default.svc.example.internal"
		reviews   = "outbound|9080||reviews.default.svc.example.internal"
		db        = "outbound|5432||db.default.svc.example.internal"
	)
	c := e.gateway("public-1", publicLabels, nil)
	s := waitFor(t, c, "the short-name routes", func(s adsc.State) bool {
		return allACKed(s) && s.Routes["http.80"] != nil && s.Listeners["0.0.0.0_31400"] != nil
	})
	var httpClusters []string
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			httpClusters = append(httpClusters, r.GetRoute().GetCluster())
		}
	}
	if len(httpClusters) != 1 || httpClusters[0] != reviewsV1 {
		t.Errorf("VirtualService destination reviews, subset v1: route clusters %v, want [%s]", httpClusters, reviewsV1)
	}
	if tp := tcpProxyOf(t, chainFor(s.Listeners["0.0.0.0_31400"], "")); tp.GetCluster() != db {
		t.Errorf("TCP destination db: proxies to %q, want %s", tp.GetCluster(), db)
	}
	for _, name := range []string{reviews, reviewsV1, db} {
		if s.Clusters[name] == nil {
			t.Errorf("cluster %s missing: %v", name, s.Names(adsc.ClusterType))
		}
	}

	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s = waitFor(t, edge, "the HTTPRoute on listener 8080", func(s adsc.State) bool {
		return allACKed(s) && hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/api")
	})
	for _, vh := range s.Routes["http.8080"].GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if got := r.GetRoute().GetCluster(); got != reviews {
				t.Errorf("HTTPRoute backendRef reviews: route %s goes to %q, want %s", r.GetName(), got, reviews)
			}
		}
	}

	if errs := e.configz().Errors; len(errs) > 0 {
		t.Errorf("configz reports problems: %+v", errs)
	}
}
