package xds

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/subscription"
)

// deltaClient is a minimal delta (incremental) ADS client: it keeps the
// versions it holds per type, as Envoy does, and lets a test choose every
// request.
type deltaClient struct {
	t      *testing.T
	node   *core.Node
	conn   *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	cancel context.CancelFunc
	recv   chan *discovery.DeltaDiscoveryResponse
	err    chan error
	done   sync.WaitGroup
	sent   bool
	// held is, per type, the resources accepted: name -> version.
	held map[string]map[string]string
	// initial is sent as initial_resource_versions with a type's first request.
	initial map[string]map[string]string
	asked   map[string]bool
}

func (h *harness) connectDelta(id string, labels map[string]string, initial map[string]map[string]string, opts ...grpc.DialOption) *deltaClient {
	h.t.Helper()
	md := map[string]any{"NAMESPACE": "istio-system"}
	if labels != nil {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		md["LABELS"] = l
	}
	meta, err := structpb.NewStruct(md)
	if err != nil {
		h.t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	c := &deltaClient{t: h.t, node: &core.Node{Id: id, Metadata: meta}, conn: conn, stream: stream, cancel: cancel,
		recv: make(chan *discovery.DeltaDiscoveryResponse, 64), err: make(chan error, 1),
		held: map[string]map[string]string{}, initial: initial, asked: map[string]bool{}}
	c.done.Go(func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.err <- err
				close(c.recv)
				return
			}
			c.recv <- resp
		}
	})
	h.t.Cleanup(c.close)
	return c
}

func (c *deltaClient) close() {
	c.cancel()
	c.done.Wait()
	_ = c.conn.Close()
}

func (c *deltaClient) send(req *discovery.DeltaDiscoveryRequest) {
	c.t.Helper()
	if !c.sent {
		req.Node = c.node
		c.sent = true
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send %s: %v", req.GetTypeUrl(), err)
	}
}

// subscribe adds names to the type's subscription (none: wildcard, for a
// type's first request).
func (c *deltaClient) subscribe(typeURL string, names ...string) {
	c.t.Helper()
	req := &discovery.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names}
	if !c.asked[typeURL] {
		req.InitialResourceVersions = c.initial[typeURL]
		c.asked[typeURL] = true
	}
	c.send(req)
}

func (c *deltaClient) unsubscribe(typeURL string, names ...string) {
	c.t.Helper()
	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesUnsubscribe: names})
	for _, n := range names {
		delete(c.held[typeURL], n)
	}
}

func (c *deltaClient) next(typeURL string) *discovery.DeltaDiscoveryResponse {
	c.t.Helper()
	select {
	case resp, ok := <-c.recv:
		if !ok {
			c.t.Fatalf("stream ended waiting for %s: %v", snapshot.ShortType(typeURL), <-c.err)
		}
		if resp.GetTypeUrl() != typeURL {
			c.t.Fatalf("got %s %v removed %v, want %s", snapshot.ShortType(resp.GetTypeUrl()), deltaNames(resp), resp.GetRemovedResources(), snapshot.ShortType(typeURL))
		}
		return resp
	case <-time.After(wait):
		c.t.Fatalf("no %s response", snapshot.ShortType(typeURL))
	}
	return nil
}

// ack applies resp to what the client holds and acknowledges it.
func (c *deltaClient) ack(resp *discovery.DeltaDiscoveryResponse) {
	c.t.Helper()
	t := resp.GetTypeUrl()
	if c.held[t] == nil {
		c.held[t] = map[string]string{}
	}
	for _, r := range resp.GetResources() {
		c.held[t][r.GetName()] = r.GetVersion()
	}
	for _, n := range resp.GetRemovedResources() {
		delete(c.held[t], n)
	}
	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: t, ResponseNonce: resp.GetNonce()})
}

func (c *deltaClient) nack(resp *discovery.DeltaDiscoveryResponse, msg string) {
	c.t.Helper()
	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
		ErrorDetail: &status.Status{Code: 3, Message: msg}})
}

// barrier proves every earlier request was handled: it drops and re-adds
// one endpoint assignment, which can only be answered after them (and
// after any response they caused, which next would report).
func (c *deltaClient) barrier(name string) {
	c.t.Helper()
	c.unsubscribe(resource.EndpointType, name)
	c.subscribe(resource.EndpointType, name)
	resp := c.next(resource.EndpointType)
	if got := deltaNames(resp); !slices.Equal(got, []string{name}) {
		c.t.Fatalf("barrier answered with %v", got)
	}
	c.ack(resp)
}

// syncEnvoy does what Envoy does on a delta stream: CDS wildcard, EDS for
// the clusters, LDS wildcard, RDS for the listeners.
func (c *deltaClient) syncEnvoy(eds, rds []string) map[string]*discovery.DeltaDiscoveryResponse {
	c.t.Helper()
	got := map[string]*discovery.DeltaDiscoveryResponse{}
	for _, step := range []struct {
		typeURL string
		names   []string
	}{{resource.ClusterType, nil}, {resource.EndpointType, eds}, {resource.ListenerType, nil}, {resource.RouteType, rds}} {
		c.subscribe(step.typeURL, step.names...)
		resp := c.next(step.typeURL)
		got[step.typeURL] = resp
		c.ack(resp)
	}
	return got
}

func deltaNames(resp *discovery.DeltaDiscoveryResponse) []string {
	var out []string
	for _, r := range resp.GetResources() {
		out = append(out, r.GetName())
	}
	slices.Sort(out)
	return out
}

func TestDeltaSendsOnlyWhatChanged(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	c := h.connectDelta(nodeID("d"), ingressLabels, nil)
	first := c.syncEnvoy([]string{reviewsCDS}, []string{"http.80"})
	for typ, want := range map[string][]string{resource.ClusterType: {reviewsCDS}, resource.EndpointType: {reviewsCDS},
		resource.ListenerType: {"0.0.0.0_80"}, resource.RouteType: {"http.80"}} {
		if got := deltaNames(first[typ]); !slices.Equal(got, want) {
			t.Errorf("initial %s = %v, want %v", snapshot.ShortType(typ), got, want)
		}
		if r := first[typ].GetResources()[0]; r.GetVersion() == "" || r.GetResource().GetTypeUrl() != typ {
			t.Errorf("initial %s resource has version %q, type %q", snapshot.ShortType(typ), r.GetVersion(), r.GetResource().GetTypeUrl())
		}
	}

	// A new service: only its cluster is sent, then only its assignment.
	h.update("se-add", withRatings()...)
	cds := c.next(resource.ClusterType)
	if got := deltaNames(cds); !slices.Equal(got, []string{ratingsCDS}) || len(cds.GetRemovedResources()) != 0 {
		t.Errorf("CDS update = %v removed %v, want only the new cluster", got, cds.GetRemovedResources())
	}
	c.ack(cds)
	c.subscribe(resource.EndpointType, ratingsCDS)
	eds := c.next(resource.EndpointType)
	if got := deltaNames(eds); !slices.Equal(got, []string{ratingsCDS}) {
		t.Errorf("EDS for the new cluster = %v", got)
	}
	c.ack(eds)
	c.barrier(reviewsCDS) // LDS and RDS did not change: nothing else was sent

	// The service goes: its cluster and assignment are removed by name.
	h.update("se-delete", base()...)
	cds = c.next(resource.ClusterType)
	if len(cds.GetResources()) != 0 || !slices.Equal(cds.GetRemovedResources(), []string{ratingsCDS}) {
		t.Errorf("CDS after removal: %v removed %v", deltaNames(cds), cds.GetRemovedResources())
	}
	c.ack(cds)
	eds = c.next(resource.EndpointType)
	if len(eds.GetResources()) != 0 || !slices.Equal(eds.GetRemovedResources(), []string{ratingsCDS}) {
		t.Errorf("EDS after removal: %v removed %v", deltaNames(eds), eds.GetRemovedResources())
	}
	c.ack(eds)
	c.barrier(reviewsCDS)
	if got := h.metric("pilot_xds_pushes", "type", "lds"); got != 1 {
		t.Errorf("LDS sent %v times, want once", got)
	}
	if st := syncOf(t, h, nodeID("d"), "cds"); st.Status != "SYNCED" || st.SentVersion != st.SnapshotVersion {
		t.Errorf("syncz cds %+v", st)
	}
}

// On reconnect the client names the versions it holds; only what differs
// is sent, and the first answer comes even when nothing does.
func TestDeltaReconnectSendsOnlyWhatDiffers(t *testing.T) {
	h := newHarness(t, newTestStore(withRatings()...))
	h.syncAndWait()
	c := h.connectDelta(nodeID("d"), ingressLabels, nil)
	c.syncEnvoy([]string{reviewsCDS, ratingsCDS}, []string{"http.80"})
	held := map[string]map[string]string{}
	for typ, m := range c.held {
		held[typ] = maps.Clone(m)
	}
	c.close()

	// The client holds an outdated ratings cluster and a cluster that is gone.
	held[resource.ClusterType][ratingsCDS] = "outdated"
	held[resource.ClusterType]["outbound|1||gone.example.com"] = "v0"
	r := h.connectDelta(nodeID("d"), ingressLabels, held)
	got := r.syncEnvoy([]string{reviewsCDS, ratingsCDS}, []string{"http.80"})
	cds := got[resource.ClusterType]
	if names := deltaNames(cds); !slices.Equal(names, []string{ratingsCDS}) ||
		!slices.Equal(cds.GetRemovedResources(), []string{"outbound|1||gone.example.com"}) {
		t.Errorf("CDS on reconnect = %v removed %v, want the outdated cluster and the gone one removed", names, cds.GetRemovedResources())
	}
	for _, typ := range []string{resource.EndpointType, resource.ListenerType, resource.RouteType} {
		if n, rm := len(got[typ].GetResources()), len(got[typ].GetRemovedResources()); n != 0 || rm != 0 {
			t.Errorf("%s on reconnect sent %d resources, removed %d, want an empty answer", snapshot.ShortType(typ), n, rm)
		}
	}
}

// A NACK keeps the proxy on its last good versions: the rejected resources
// are not sent again, the NACK is counted and shown, and the next change
// is delivered.
func TestDeltaNackKeepsLastGoodConfig(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	c := h.connectDelta(nodeID("d"), ingressLabels, nil)
	first := c.syncEnvoy([]string{reviewsCDS}, []string{"http.80"})

	h.update("vs-change", withRoute("reviews.example.com", "v2.example.com")...)
	bad := c.next(resource.RouteType)
	c.nack(bad, "route config rejected: test")
	c.barrier(reviewsCDS) // the rejected routes are not sent again

	if got := h.metric("pilot_total_xds_rejects", "type", "rds"); got != 1 {
		t.Errorf("pilot_total_xds_rejects{type=rds} = %v, want 1", got)
	}
	st := syncOf(t, h, nodeID("d"), "rds")
	if st.Status != "NACKED" || st.AckedVersion != first[resource.RouteType].GetSystemVersionInfo() ||
		st.SentVersion != bad.GetSystemVersionInfo() || st.LastNack == nil || st.LastNack.Message != "route config rejected: test" {
		t.Errorf("syncz rds after NACK = %+v", st)
	}

	h.update("vs-change", withRoute("reviews.example.com", "v3.example.com")...)
	good := c.next(resource.RouteType)
	if got := deltaNames(good); !slices.Equal(got, []string{"http.80"}) || good.GetResources()[0].GetVersion() == bad.GetResources()[0].GetVersion() {
		t.Errorf("next change = %v", got)
	}
	c.ack(good)
	c.barrier(reviewsCDS)
	if st := syncOf(t, h, nodeID("d"), "rds"); st.Status != "SYNCED" || st.AckedVersion != good.GetSystemVersionInfo() {
		t.Errorf("syncz rds after the next change = %+v", st)
	}
	az := h.s.Adsz(nil)
	if len(az.Proxies) != 1 || len(az.Proxies[0].Streams) != 1 || !az.Proxies[0].Streams[0].Delta {
		t.Errorf("adsz does not show the delta stream: %+v", az)
	}
}

// A request that swaps one subscribed name for another leaves the client's
// version map as long as before; the new name must still be answered, and
// a push that leaves endpoints unchanged sends none.
func TestDeltaSubscriptionSwapIsAnswered(t *testing.T) {
	h := newHarness(t, newTestStore(withRatings()...))
	h.syncAndWait()
	c := h.connectDelta(nodeID("d"), ingressLabels, nil)
	c.syncEnvoy([]string{reviewsCDS}, []string{"http.80"})

	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resource.EndpointType,
		ResourceNamesSubscribe: []string{ratingsCDS}, ResourceNamesUnsubscribe: []string{reviewsCDS}})
	delete(c.held[resource.EndpointType], reviewsCDS)
	eds := c.next(resource.EndpointType)
	if got := deltaNames(eds); !slices.Equal(got, []string{ratingsCDS}) {
		t.Fatalf("EDS after swapping subscriptions = %v, want %v", got, []string{ratingsCDS})
	}
	c.ack(eds)

	h.update("vs-change", append(withRatings(), withRoute("reviews.example.com", "v2.example.com")...)...)
	c.ack(c.next(resource.RouteType))
	c.barrier(ratingsCDS) // endpoints did not change: no EDS came before the barrier's
	if got := h.metric("pilot_xds_pushes", "type", "eds"); got != 3 {
		t.Errorf("EDS sent %v times, want 3 (initial, swap, barrier)", got)
	}
}

// Unsubscribing a name that was subscribed both by name and by an explicit
// wildcard keeps the client's version map as long as before
// (go-control-plane marks the name for resending); the server must answer
// with the resource, which still exists, as the protocol asks.
func TestDeltaWildcardUnsubscribeResends(t *testing.T) {
	h := newHarness(t, newTestStore(withRatings()...))
	h.syncAndWait()
	c := h.connectDelta(nodeID("d"), ingressLabels, nil)
	c.subscribe(resource.ClusterType, "*", reviewsCDS)
	first := c.next(resource.ClusterType)
	if got := deltaNames(first); !slices.Equal(got, []string{ratingsCDS, reviewsCDS}) {
		t.Fatalf("CDS = %v", got)
	}
	c.ack(first)
	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNamesUnsubscribe: []string{reviewsCDS}})
	again := c.next(resource.ClusterType)
	if got := deltaNames(again); !slices.Equal(got, []string{reviewsCDS}) || len(again.GetRemovedResources()) != 0 {
		t.Errorf("CDS after unsubscribing from the wildcard = %v removed %v, want the cluster again", got, again.GetRemovedResources())
	}
}

// Streams sent the same resources share one list of them: a first
// response carrying the whole set (wildcard, or naming every resource)
// carries the set's own list, and any other the list of the body it
// shares. (A response is kept until written; at
// 5,000 services 500 gateways' own lists were 40 MB.)
func TestDeltaFirstResponsesShareOneResourceList(t *testing.T) {
	h := newHarness(t, newTestStore(withRatings()...))
	h.syncAndWait()
	clients := []*deltaClient{h.connectDelta(nodeID("d1"), ingressLabels, nil), h.connectDelta(nodeID("d2"), ingressLabels, nil)}
	for _, c := range clients {
		c.syncEnvoy([]string{reviewsCDS, ratingsCDS}, []string{"http.80"})
	}
	h.s.mu.Lock()
	var keys []streamKey
	for k, st := range h.s.streams {
		if k.delta && st.proxy != nil {
			keys = append(keys, k)
		}
	}
	h.s.mu.Unlock()
	if len(keys) != 2 {
		t.Fatalf("%d delta streams, want 2", len(keys))
	}
	// A fresh watch on each stream, holding nothing: its response is the
	// first response's.
	first := func(key streamKey, typeURL string, names []string) *discovery.DeltaDiscoveryResponse {
		out := newOutbox[*deltaOut]()
		req := &discovery.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names}
		cancel, err := h.s.openWatch(key, &watch{deltaReq: req, sub: subscription.NewDelta(names, nil, nil, h.s.legacyWildcard(typeURL)), deltaOut: out})
		if err != nil {
			t.Fatal(err)
		}
		defer cancel()
		got := out.take()
		if len(got) != 1 {
			t.Fatalf("%s: %d responses, want 1", snapshot.ShortType(typeURL), len(got))
		}
		return got[0].resp
	}
	for typeURL, names := range map[string][]string{resource.ClusterType: nil, resource.EndpointType: {ratingsCDS, reviewsCDS}} {
		a, b := first(keys[0], typeURL, names), first(keys[1], typeURL, names)
		if got := deltaNames(a); !slices.Equal(got, []string{ratingsCDS, reviewsCDS}) || !slices.Equal(deltaNames(b), got) {
			t.Fatalf("%s: first responses carry %v and %v", snapshot.ShortType(typeURL), got, deltaNames(b))
		}
		if &a.Resources[0] != &b.Resources[0] {
			t.Errorf("%s: the two streams' first responses have lists of their own", snapshot.ShortType(typeURL))
		}
		// Naming every resource (EDS here), as wildcard: the set's own list.
		h.s.mu.Lock()
		set := h.s.streams[keys[0]].proxy.view.Set(typeURL)
		h.s.mu.Unlock()
		if &a.Resources[0] != &set.AllDeltas()[0] {
			t.Errorf("%s: the first response does not carry the set's own list", snapshot.ShortType(typeURL))
		}
	}
}
