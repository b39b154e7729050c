package adsc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// dial connects a client with the test node to cp and closes it at cleanup.
func dial(t *testing.T, cp *controlPlane, cfg Config) *Client {
	t.Helper()
	cfg.Address = cp.addr
	if cfg.Node == nil {
		cfg.Node = testNode()
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	c, err := Dial(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func allAt(version string) func(State) bool {
	return func(s State) bool {
		for _, t := range typeOrder {
			if s.Version(t) != version {
				return false
			}
		}
		return true
	}
}

func waitState(t *testing.T, c *Client, what string, cond func(State) bool) State {
	t.Helper()
	if err := c.WaitFor(testCtx(t), cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return c.State()
}

// responseNonce is the nonce the server sent with typeURL at version.
func responseNonce(t *testing.T, cp *controlPlane, typeURL, version string) string {
	t.Helper()
	for _, r := range cp.responses.all() {
		if r.GetTypeUrl() == typeURL && r.GetVersionInfo() == version {
			return r.GetNonce()
		}
	}
	t.Fatalf("server sent no %s response at version %q", ShortName(typeURL), version)
	return ""
}

func requestsOfType(reqs []*discoverygrpc.DiscoveryRequest, typeURL string) []*discoverygrpc.DiscoveryRequest {
	var out []*discoverygrpc.DiscoveryRequest
	for _, r := range reqs {
		if r.GetTypeUrl() == typeURL {
			out = append(out, r)
		}
	}
	return out
}

func checkSameResources[M proto.Message](t *testing.T, what string, got map[string]M, want []M, name func(M) string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d resources %v, want %d", what, len(got), slices.Sorted(maps.Keys(got)), len(want))
	}
	for _, w := range want {
		if g, ok := got[name(w)]; !ok || !proto.Equal(g, w) {
			t.Errorf("%s %q: got %v, want %v", what, name(w), g, w)
		}
	}
}

func checkState(t *testing.T, st State, cfg config) {
	t.Helper()
	checkSameResources(t, "cluster", st.Clusters, cfg.clusters, (*clusterv3.Cluster).GetName)
	checkSameResources(t, "endpoints", st.Endpoints, cfg.endpoints, (*endpointv3.ClusterLoadAssignment).GetClusterName)
	checkSameResources(t, "listener", st.Listeners, cfg.listeners, (*listenerv3.Listener).GetName)
	checkSameResources(t, "route", st.Routes, cfg.routes, (*routev3.RouteConfiguration).GetName)
}

func TestInitialSyncFollowsEnvoyOrder(t *testing.T) {
	cp := startControlPlane(t)
	node := testNode()
	cfg := baseConfig(t)
	cp.set(t, node, cfg.snapshot(t, "1", false))
	c := dial(t, cp, Config{Node: node})

	// Events: one per response, in Envoy's warming order, all ACKed.
	cur := c.Events()
	wantEvents := []struct {
		typeURL string
		names   []string
	}{
		{ClusterType, []string{reviewsCluster}},
		{EndpointType, []string{reviewsCluster}},
		{ListenerType, []string{listener80}},
		{RouteType, []string{route80}},
	}
	for i, want := range wantEvents {
		ev, err := cur.Next(testCtx(t))
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Kind != ACK || ev.TypeURL != want.typeURL || ev.Version != "1" || !slices.Equal(ev.Names, want.names) || ev.Err != nil {
			t.Errorf("event %d = %s %s v%q %v err=%v, want ACK %s v\"1\" %v", i, ev.Kind, ShortName(ev.TypeURL), ev.Version, ev.Names, ev.Err, ShortName(want.typeURL), want.names)
		}
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d has Seq %d", i, ev.Seq)
		}
		if n := responseNonce(t, cp, want.typeURL, "1"); ev.Nonce != n {
			t.Errorf("event %d nonce %q, server sent %q", i, ev.Nonce, n)
		}
	}

	st := waitState(t, c, "all types at version 1", allAt("1"))
	checkState(t, st, cfg)
	for _, typ := range typeOrder {
		ts := st.Types[typ]
		if ts.ACKs != 1 || ts.NACKs != 0 || ts.Error != "" || ts.Nonce != ts.LastNonce || ts.Nonce == "" {
			t.Errorf("%s state = %+v, want one ACK with its nonce", ShortName(typ), ts)
		}
	}
	if ts := st.Types[ClusterType]; !ts.Wildcard || ts.Subscribed != nil {
		t.Errorf("CDS subscription = %+v, want wildcard", ts)
	}
	if ts := st.Types[EndpointType]; ts.Wildcard || !slices.Equal(ts.Subscribed, []string{reviewsCluster}) {
		t.Errorf("EDS subscription = %v, want [%s]", ts.Subscribed, reviewsCluster)
	}
	if ts := st.Types[RouteType]; ts.Wildcard || !slices.Equal(ts.Subscribed, []string{route80}) {
		t.Errorf("RDS subscription = %v, want [%s]", ts.Subscribed, route80)
	}

	// What the server's callbacks saw: each type subscribed in order, each
	// response ACKed with its version and nonce before the next type starts.
	reqs, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool { return len(r) >= 8 })
	if err != nil {
		t.Fatalf("waiting for 8 requests: %v (got %d)", err, len(reqs))
	}
	type want struct {
		typeURL string
		names   []string
		ack     bool
	}
	wantReqs := []want{
		{ClusterType, nil, false}, {ClusterType, nil, true},
		{EndpointType, []string{reviewsCluster}, false}, {EndpointType, []string{reviewsCluster}, true},
		{ListenerType, nil, false}, {ListenerType, nil, true},
		{RouteType, []string{route80}, false}, {RouteType, []string{route80}, true},
	}
	for i, w := range wantReqs {
		r := reqs[i]
		wantVersion, wantNonce := "", ""
		if w.ack {
			wantVersion, wantNonce = "1", responseNonce(t, cp, w.typeURL, "1")
		}
		if r.GetTypeUrl() != w.typeURL || !slices.Equal(r.GetResourceNames(), w.names) ||
			r.GetVersionInfo() != wantVersion || r.GetResponseNonce() != wantNonce || r.GetErrorDetail() != nil {
			t.Errorf("request %d = %s names=%v version=%q nonce=%q error=%v; want %s names=%v version=%q nonce=%q",
				i, ShortName(r.GetTypeUrl()), r.GetResourceNames(), r.GetVersionInfo(), r.GetResponseNonce(), r.GetErrorDetail(),
				ShortName(w.typeURL), w.names, wantVersion, wantNonce)
		}
	}
	if len(reqs) != len(wantReqs) {
		t.Errorf("server saw %d requests, want %d", len(reqs), len(wantReqs))
	}

	// On the wire only the first request carries the node, and it is an
	// identity istiod accepts.
	raw := cp.raw.all()
	if len(raw) == 0 || !proto.Equal(raw[0].GetNode(), node) {
		t.Fatalf("first request's node = %v, want %v", raw[0].GetNode(), node)
	}
	for i, r := range raw[1:] {
		if r.GetNode() != nil {
			t.Errorf("request %d repeats the node", i+1)
		}
	}
	p, err := model.ParseProxy(raw[0].GetNode())
	if err != nil {
		t.Fatalf("ParseProxy: %v", err)
	}
	if p.Type != model.Router || p.Namespace != "istio-system" || p.PodName != "gw-1" || p.Labels["istio"] != "ingressgateway" {
		t.Errorf("ParseProxy = %+v", p)
	}
}

func TestUpdatesChangeSubscriptions(t *testing.T) {
	cp := startControlPlane(t)
	node := testNode()
	v1 := baseConfig(t)
	cp.set(t, node, v1.snapshot(t, "1", false))
	c := dial(t, cp, Config{Node: node})
	st1 := waitState(t, c, "version 1", allAt("1"))

	// v2 adds a second EDS cluster, whose endpoints are named by its
	// service_name, and a second listener with its own route.
	ratings := edsCluster(ratingsCluster)
	ratings.EdsClusterConfig.ServiceName = "ratings.default"
	v2 := config{
		clusters:  []*clusterv3.Cluster{edsCluster(reviewsCluster), ratings},
		endpoints: []*endpointv3.ClusterLoadAssignment{assignment(reviewsCluster, "10.1.0.1", "10.1.0.2"), assignment("ratings.default", "10.2.0.1")},
		listeners: []*listenerv3.Listener{httpListener(t, listener80, 80, route80), httpListener(t, listener8080, 8080, route8080)},
		routes:    []*routev3.RouteConfiguration{routeConfig(route80, reviewsCluster, "/v2"), routeConfig(route8080, ratingsCluster, "/")},
	}
	cp.set(t, node, v2.snapshot(t, "2", false))
	st := waitState(t, c, "version 2", allAt("2"))
	checkState(t, st, v2)
	wantEDS := []string{reviewsCluster, "ratings.default"}
	slices.Sort(wantEDS)
	if got := st.Types[EndpointType].Subscribed; !slices.Equal(got, wantEDS) {
		t.Errorf("EDS subscription = %v, want %v", got, wantEDS)
	}
	if got := st.Types[RouteType].Subscribed; !slices.Equal(got, []string{route80, route8080}) {
		t.Errorf("RDS subscription = %v, want [%s %s]", got, route80, route8080)
	}
	// The server was asked for the new names, with the last accepted version.
	reqs := cp.requests.all()
	if !slices.ContainsFunc(requestsOfType(reqs, EndpointType), func(r *discoverygrpc.DiscoveryRequest) bool {
		return slices.Equal(r.GetResourceNames(), wantEDS) && r.GetVersionInfo() == "1" && r.GetResponseNonce() != ""
	}) {
		t.Errorf("server saw no EDS request for %v at version 1: %v", wantEDS, requestsOfType(reqs, EndpointType))
	}
	if !slices.ContainsFunc(requestsOfType(reqs, RouteType), func(r *discoverygrpc.DiscoveryRequest) bool {
		return slices.Equal(r.GetResourceNames(), []string{route80, route8080})
	}) {
		t.Errorf("server saw no RDS request for both routes")
	}

	// v3 drops the reviews cluster and the 8080 listener: the client
	// unsubscribes their endpoints and route and forgets them.
	v3 := config{
		clusters:  []*clusterv3.Cluster{ratings},
		endpoints: []*endpointv3.ClusterLoadAssignment{assignment("ratings.default", "10.2.0.1")},
		listeners: []*listenerv3.Listener{httpListener(t, listener80, 80, route80)},
		routes:    []*routev3.RouteConfiguration{routeConfig(route80, ratingsCluster, "/")},
	}
	cp.set(t, node, v3.snapshot(t, "3", false))
	st = waitState(t, c, "version 3 with the old names unsubscribed", func(s State) bool {
		return allAt("3")(s) && len(s.Types[EndpointType].Subscribed) == 1 && len(s.Types[RouteType].Subscribed) == 1
	})
	checkState(t, st, v3)
	if got := st.Types[EndpointType].Subscribed; !slices.Equal(got, []string{"ratings.default"}) {
		t.Errorf("EDS subscription = %v, want [ratings.default]", got)
	}
	if got := st.Types[RouteType].Subscribed; !slices.Equal(got, []string{route80}) {
		t.Errorf("RDS subscription = %v, want [%s]", got, route80)
	}
	reqs, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool {
		return slices.ContainsFunc(requestsOfType(r, EndpointType), func(r *discoverygrpc.DiscoveryRequest) bool {
			return slices.Equal(r.GetResourceNames(), []string{"ratings.default"})
		})
	})
	if err != nil {
		t.Errorf("server saw no EDS request for [ratings.default]: %v", requestsOfType(reqs, EndpointType))
	}
	// The state read at version 1 was not changed by the later updates:
	// published states are immutable.
	checkState(t, st1, v1)
	if st1.Version(ClusterType) != "1" || len(st1.Types[EndpointType].Subscribed) != 1 {
		t.Errorf("state read at version 1 changed: %s", st1.summary())
	}
}

func TestLastEDSClusterRemovedUnsubscribes(t *testing.T) {
	const static = "outbound|7070||static.default.svc.cluster.local"
	cp := startControlPlane(t)
	node := testNode()
	cp.set(t, node, baseConfig(t).snapshot(t, "1", false))
	c := dial(t, cp, Config{Node: node})
	waitState(t, c, "version 1", allAt("1"))

	v2 := config{
		clusters:  []*clusterv3.Cluster{staticCluster(static)},
		listeners: []*listenerv3.Listener{httpListener(t, listener80, 80, route80)},
		routes:    []*routev3.RouteConfiguration{routeConfig(route80, static, "/")},
	}
	cp.set(t, node, v2.snapshot(t, "2", false))
	st := waitState(t, c, "version 2 with EDS unsubscribed", func(s State) bool {
		return s.Version(ClusterType) == "2" && s.Version(ListenerType) == "2" && s.Version(RouteType) == "2" &&
			len(s.Types[EndpointType].Subscribed) == 0
	})
	checkState(t, st, v2)
	if len(st.Endpoints) != 0 {
		t.Errorf("endpoints kept after unsubscribing: %v", st.Names(EndpointType))
	}
	// Envoy tells the server that nothing is wanted any more: a request
	// with no names, answering the last EDS response (the server may have
	// sent EDS at version 2 before CDS, so either version can be current).
	eds := st.Types[EndpointType]
	if reqs, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool {
		return slices.ContainsFunc(requestsOfType(r, EndpointType), func(r *discoverygrpc.DiscoveryRequest) bool {
			return len(r.GetResourceNames()) == 0 && r.GetResponseNonce() == eds.LastNonce && r.GetVersionInfo() == eds.Version
		})
	}); err != nil {
		t.Errorf("server saw no EDS request without names at version %q nonce %q: %v", eds.Version, eds.LastNonce, requestsOfType(reqs, EndpointType))
	}
}

func TestRejectNACKsAndKeepsPreviousState(t *testing.T) {
	const bad = "outbound|9999||bad.default.svc.cluster.local"
	cp := startControlPlane(t)
	node := testNode()
	v1 := baseConfig(t)
	cp.set(t, node, v1.snapshot(t, "1", false))
	reject := func(typeURL string, resources []*anypb.Any) error {
		if typeURL != ClusterType {
			return nil
		}
		names, err := clusterNames(resources)
		if err != nil {
			return err
		}
		if slices.Contains(names, bad) {
			return fmt.Errorf("cluster %s is not allowed", bad)
		}
		return nil
	}
	c := dial(t, cp, Config{Node: node, Reject: reject})
	waitState(t, c, "version 1", allAt("1"))
	cur := c.NewEvents()

	v2 := baseConfig(t)
	v2.clusters = append(v2.clusters, staticCluster(bad))
	cp.set(t, node, v2.snapshot(t, "2", false))

	ev, err := cur.NextMatching(testCtx(t), func(ev Event) bool { return ev.TypeURL == ClusterType })
	if err != nil {
		t.Fatalf("waiting for the CDS response: %v", err)
	}
	wantMsg := fmt.Sprintf("cluster %s is not allowed", bad)
	if ev.Kind != NACK || ev.Version != "2" || ev.Err == nil || ev.Err.Error() != wantMsg || !slices.Contains(ev.Names, bad) {
		t.Fatalf("CDS event = %s v%q %v err=%v, want NACK v\"2\" with %q", ev.Kind, ev.Version, ev.Names, ev.Err, wantMsg)
	}

	// The server's callbacks saw the NACK: the reason in error_detail, the
	// last accepted version, the rejected response's nonce.
	reqs, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool {
		return slices.ContainsFunc(r, func(r *discoverygrpc.DiscoveryRequest) bool { return r.GetResponseNonce() == ev.Nonce })
	})
	if err != nil {
		t.Fatalf("server saw no request answering nonce %q: %v", ev.Nonce, err)
	}
	i := slices.IndexFunc(reqs, func(r *discoverygrpc.DiscoveryRequest) bool { return r.GetResponseNonce() == ev.Nonce })
	nack := reqs[i]
	if nack.GetTypeUrl() != ClusterType || nack.GetVersionInfo() != "1" || nack.GetErrorDetail().GetMessage() != wantMsg ||
		nack.GetErrorDetail().GetCode() != int32(codes.InvalidArgument) || len(nack.GetResourceNames()) != 0 {
		t.Errorf("NACK request = %v, want CDS version \"1\" with error_detail %q", nack, wantMsg)
	}

	// The other types move on to version 2; CDS stays on version 1.
	st := waitState(t, c, "EDS, LDS and RDS at version 2", func(s State) bool {
		return s.Version(EndpointType) == "2" && s.Version(ListenerType) == "2" && s.Version(RouteType) == "2"
	})
	cds := st.Types[ClusterType]
	if cds.Version != "1" || cds.NACKs == 0 || cds.Error != wantMsg || cds.ACKs != 1 {
		t.Errorf("CDS state = %+v, want version 1 with the NACK recorded", cds)
	}
	checkSameResources(t, "cluster", st.Clusters, v1.clusters, (*clusterv3.Cluster).GetName)
	// go-control-plane answers a NACK (which carries the old version) by
	// sending the rejected version again, so the count keeps growing.
	t.Logf("CDS NACKed %d times so far", cds.NACKs)

	// A fixed config is accepted and clears the error.
	v3 := baseConfig(t)
	cp.set(t, node, v3.snapshot(t, "3", false))
	st = waitState(t, c, "version 3", allAt("3"))
	if st.Types[ClusterType].Error != "" {
		t.Errorf("CDS error after an ACK = %q", st.Types[ClusterType].Error)
	}
	checkState(t, st, v3)
}

func TestInvalidResourcesAreNACKed(t *testing.T) {
	cp := startControlPlane(t)
	node := testNode()
	cfg := baseConfig(t)
	broken := staticCluster("outbound|7070||broken.default.svc.cluster.local")
	broken.ConnectTimeout.Seconds = -1 // connect_timeout must be > 0
	cfg.clusters = append(cfg.clusters, broken)
	cp.set(t, node, cfg.snapshot(t, "1", true))
	c := dial(t, cp, Config{Node: node})

	ev, err := c.Events().NextMatching(testCtx(t), func(ev Event) bool { return ev.TypeURL == ClusterType })
	if err != nil {
		t.Fatalf("waiting for CDS: %v", err)
	}
	if ev.Kind != NACK || ev.Err == nil || !strings.Contains(ev.Err.Error(), broken.GetName()) || !strings.Contains(ev.Err.Error(), "ConnectTimeout") {
		t.Fatalf("CDS event = %s err=%v, want a NACK naming %s and ConnectTimeout", ev.Kind, ev.Err, broken.GetName())
	}
	// Like a failed fetch in Envoy, the rejection ends the cluster wait:
	// the listeners still come, with no cluster accepted.
	st := waitState(t, c, "LDS and RDS at version 1", func(s State) bool {
		return s.Version(ListenerType) == "1" && s.Version(RouteType) == "1"
	})
	if len(st.Clusters) != 0 || st.Types[ClusterType].Version != "" || st.Types[ClusterType].Error == "" {
		t.Errorf("CDS state = %+v with clusters %v, want nothing accepted", st.Types[ClusterType], st.Names(ClusterType))
	}
	if _, ok := st.Types[EndpointType]; ok {
		t.Errorf("EDS was requested although no cluster was accepted")
	}
}

func TestInitialFetchTimeout(t *testing.T) {
	t.Run("no CDS response", func(t *testing.T) {
		cp := startControlPlane(t)
		node := testNode()
		clk := testingclock.NewFakeClock(time.Unix(0, 0))
		c := dial(t, cp, Config{Node: node, Clock: clk})

		if _, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool { return len(r) == 1 }); err != nil {
			t.Fatalf("waiting for the CDS request: %v", err)
		}
		if got := cp.requests.all(); len(got) != 1 || got[0].GetTypeUrl() != ClusterType {
			t.Fatalf("before the timeout the server saw %d requests, want only CDS", len(got))
		}
		clk.Step(DefaultInitialFetchTimeout)
		if _, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool {
			return len(requestsOfType(r, ListenerType)) == 1
		}); err != nil {
			t.Fatalf("no LDS request after the initial fetch timeout: %v", err)
		}
		cfg := baseConfig(t)
		cp.set(t, node, cfg.snapshot(t, "1", false))
		checkState(t, waitState(t, c, "version 1", allAt("1")), cfg)
	})

	t.Run("no endpoints for the cluster", func(t *testing.T) {
		cp := startControlPlane(t)
		node := testNode()
		cfg := baseConfig(t)
		cfg.endpoints = nil // the snapshot is then inconsistent, as a buggy server's would be
		snap := cfg.snapshot(t, "1", false)
		if err := cp.cache.SetSnapshot(context.Background(), node.GetId(), snap); err != nil {
			t.Fatal(err)
		}
		clk := testingclock.NewFakeClock(time.Unix(0, 0))
		c := dial(t, cp, Config{Node: node, Clock: clk})

		// The EDS request is sent after the EDS wait's timer is armed.
		if _, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool {
			return len(requestsOfType(r, EndpointType)) >= 1
		}); err != nil {
			t.Fatalf("waiting for the EDS request: %v", err)
		}
		if got := requestsOfType(cp.requests.all(), ListenerType); len(got) != 0 {
			t.Fatalf("LDS requested while the cluster is warming")
		}
		clk.Step(DefaultInitialFetchTimeout)
		st := waitState(t, c, "LDS and RDS at version 1", func(s State) bool {
			return s.Version(ListenerType) == "1" && s.Version(RouteType) == "1"
		})
		if len(st.Endpoints) != 0 || !slices.Equal(st.Types[EndpointType].Subscribed, []string{reviewsCluster}) {
			t.Errorf("EDS state = %+v endpoints %v, want subscribed with none received", st.Types[EndpointType], st.Names(EndpointType))
		}
	})
}

func TestEagerLDSRequestsListenersAtOnce(t *testing.T) {
	cp := startControlPlane(t)
	node := testNode()
	c := dial(t, cp, Config{Node: node, EagerLDS: true})
	reqs, err := cp.requests.waitFor(testCtx(t), func(r []*discoverygrpc.DiscoveryRequest) bool { return len(r) == 2 })
	if err != nil {
		t.Fatalf("waiting for two requests: %v", err)
	}
	if reqs[0].GetTypeUrl() != ClusterType || reqs[1].GetTypeUrl() != ListenerType {
		t.Errorf("first requests = %s, %s; want CDS, LDS", ShortName(reqs[0].GetTypeUrl()), ShortName(reqs[1].GetTypeUrl()))
	}
	cfg := baseConfig(t)
	cp.set(t, node, cfg.snapshot(t, "1", false))
	checkState(t, waitState(t, c, "version 1", allAt("1")), cfg)
}

func TestStreamErrorIsSurfaced(t *testing.T) {
	cp := startControlPlane(t)
	node := testNode()
	cp.set(t, node, baseConfig(t).snapshot(t, "1", false))
	c := dial(t, cp, Config{Node: node})
	waitState(t, c, "version 1", allAt("1"))
	if err := c.Err(); err != nil {
		t.Fatalf("Err while running = %v", err)
	}
	cur := c.NewEvents()

	cp.stop()
	err := c.WaitFor(testCtx(t), func(State) bool { return false })
	if err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), cp.addr) {
		t.Fatalf("WaitFor after the server stopped = %v, want a stream error naming %s", err, cp.addr)
	}
	<-c.Done()
	if c.Err() == nil || errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Err = %v, want the stream error", c.Err())
	}
	ev, err := cur.Next(testCtx(t))
	if err != nil || ev.Kind != StreamEnd || ev.Err == nil || ev.Err.Error() != c.Err().Error() {
		t.Errorf("last event = %+v (%v), want StreamEnd with %v", ev, err, c.Err())
	}
	if _, err := cur.Next(testCtx(t)); err == nil || err.Error() != c.Err().Error() {
		t.Errorf("Next after the end = %v, want %v", err, c.Err())
	}
	// The state of before the failure is still readable.
	if st := c.State(); st.Version(RouteType) != "1" {
		t.Errorf("state after the failure lost version 1: %s", st.summary())
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Close replaced the stream error")
	}
}

func TestCloseLeaksNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cp := startControlPlane(t)
	node := testNode()
	cp.set(t, node, baseConfig(t).snapshot(t, "1", false))
	c := dial(t, cp, Config{Node: node})
	waitState(t, c, "version 1", allAt("1"))
	cur := c.NewEvents()

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Err after Close = %v, want ErrClosed", c.Err())
	}
	if err := c.WaitFor(testCtx(t), func(State) bool { return false }); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitFor after Close = %v, want ErrClosed", err)
	}
	if ev, err := cur.Next(testCtx(t)); err != nil || ev.Kind != StreamEnd || !errors.Is(ev.Err, ErrClosed) {
		t.Errorf("event after Close = %+v (%v), want StreamEnd with ErrClosed", ev, err)
	}
	if _, err := cur.Next(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after the end = %v, want ErrClosed", err)
	}
	cp.stop()
	goleak.VerifyNone(t, before)
}

func TestDialErrors(t *testing.T) {
	if _, err := Dial(testCtx(t), Config{}); err == nil || !strings.Contains(err.Error(), "Address") || !strings.Contains(err.Error(), "Node") {
		t.Errorf("Dial with an empty config = %v, want errors naming Address and Node", err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	c, err := Dial(testCtx(t), Config{Address: addr, Node: testNode()})
	if err == nil {
		_ = c.Close()
		t.Fatalf("Dial to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("Dial error %q does not name %s", err, addr)
	}
}
