package xds

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// captureCodec records the bytes of every message a client receives and
// decodes them with the process's "proto" codec.
type captureCodec struct {
	mu     sync.Mutex
	frames [][]byte
}

func (*captureCodec) Name() string { return "proto" }

func (*captureCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (c *captureCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.mu.Lock()
	c.frames = append(c.frames, data.Materialize())
	c.mu.Unlock()
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

func (c *captureCodec) captured() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.frames)
}

func (c *captureCodec) dialOption() grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.ForceCodecV2(c))
}

// checkFrames decodes every captured frame into a fresh message and
// checks it is byte for byte the deterministic marshal of what it decodes
// to, with a nonce: what a server marshaling each response would send.
func checkFrames[M proto.Message](t *testing.T, frames [][]byte, fresh func() M) []M {
	t.Helper()
	var out []M
	for i, b := range frames {
		m := fresh()
		if err := proto.Unmarshal(b, m); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("frame %d (%d bytes) differs from the marshaled response (%d bytes)", i, len(b), len(want))
		}
		out = append(out, m)
	}
	return out
}

// Every stream of a group is sent the same bytes, serialized once per
// response content, and they decode to what marshaling the response gives.
func TestSotwResponsesSerializedOnceForAllStreams(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	const streams = 5
	codecs := make([]*captureCodec, streams)
	clients := make([]*adsClient, streams)
	got := make([]map[string]*discovery.DiscoveryResponse, streams)
	for i := range streams {
		codecs[i] = &captureCodec{}
		clients[i] = h.connect(nodeID("gw-"+string(rune('a'+i))), ingressLabels, codecs[i].dialOption())
		got[i] = clients[i].syncAll()
	}
	for _, typ := range []string{"cds", "eds", "lds", "rds"} {
		if n := h.metric("pilot_xds_pushes", "type", typ); n != streams {
			t.Errorf("%s responses sent = %v, want %d", typ, n, streams)
		}
		if n := h.metric("wayfinder_xds_response_encodings_total", "type", typ); n != 1 {
			t.Errorf("%s responses serialized %v times for %d streams, want once", typ, n, streams)
		}
	}
	for i := range streams {
		frames := checkFrames(t, codecs[i].captured(), func() *discovery.DiscoveryResponse { return &discovery.DiscoveryResponse{} })
		if len(frames) != 4 {
			t.Fatalf("stream %d received %d responses, want 4", i, len(frames))
		}
		for _, f := range frames {
			resp := got[i][f.GetTypeUrl()]
			if f.GetNonce() == "" || !proto.Equal(f, resp) {
				t.Errorf("stream %d %s: received %v, client decoded %v", i, snapshot.ShortType(f.GetTypeUrl()), f, resp)
			}
		}
		// Identical content apart from the nonce.
		for _, f := range frames {
			a := proto.Clone(f).(*discovery.DiscoveryResponse)
			b := proto.Clone(got[0][f.GetTypeUrl()]).(*discovery.DiscoveryResponse)
			a.Nonce, b.Nonce = "", ""
			if !proto.Equal(a, b) {
				t.Errorf("stream %d %s differs from stream 0's", i, snapshot.ShortType(f.GetTypeUrl()))
			}
		}
	}

	// A change is serialized once more, not once per stream.
	h.update("vs", withRoute("reviews.example.org")...)
	for _, c := range clients {
		c.ack(c.next(resource.RouteType))
	}
	if n := h.metric("wayfinder_xds_response_encodings_total", "type", "rds"); n != 2 {
		t.Errorf("rds serialized %v times after one change on %d streams, want twice", n, streams)
	}
}

// pkg/adsc, an Envoy-like client, reads the shared bytes like any response:
// same resources as the view, and the nonce it ACKs is the one sent.
func TestAdscReadsSharedResponses(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var clients []*adsc.Client
	var codecs []*captureCodec
	for i := range 3 {
		cc := &captureCodec{}
		c, err := adsc.Dial(ctx, adsc.Config{Address: h.addr, DialOptions: []grpc.DialOption{cc.dialOption()},
			Node: adsc.IstioNode(adsc.NodeOptions{PodName: "gw-" + string(rune('a'+i)), Namespace: "istio-system", Labels: ingressLabels})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients, codecs = append(clients, c), append(codecs, cc)
	}
	synced := func(s adsc.State) bool {
		for _, typ := range []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType} {
			if s.Types[typ].ACKs == 0 {
				return false
			}
		}
		return true
	}
	for _, c := range clients {
		if err := c.WaitFor(ctx, synced); err != nil {
			t.Fatal(err)
		}
	}
	v := h.snapshot(adsc.NodeID(adsc.NodeOptions{PodName: "gw-a", Namespace: "istio-system"}))
	for i, c := range clients {
		st := c.State()
		frames := checkFrames(t, codecs[i].captured(), func() *discovery.DiscoveryResponse { return &discovery.DiscoveryResponse{} })
		last := map[string]*discovery.DiscoveryResponse{}
		for _, f := range frames {
			last[f.GetTypeUrl()] = f
		}
		for typ, f := range last {
			ts := st.Types[typ]
			if ts.Nonce != f.GetNonce() || ts.Version != f.GetVersionInfo() || f.GetNonce() == "" {
				t.Errorf("client %d %s: ACKed version %q nonce %q, sent %q %q", i, snapshot.ShortType(typ), ts.Version, ts.Nonce, f.GetVersionInfo(), f.GetNonce())
			}
			if ts.NACKs != 0 {
				t.Errorf("client %d NACKed %s", i, snapshot.ShortType(typ))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(st.Clusters)) {
			r := v.Set(resource.ClusterType).ByName[name]
			want := &cluster.Cluster{}
			if r == nil || anypb.UnmarshalTo(r.Any, want, proto.UnmarshalOptions{}) != nil || !proto.Equal(want, st.Clusters[name]) {
				t.Errorf("client %d cluster %s differs from the view", i, name)
			}
		}
		if len(st.Clusters) != len(v.Set(resource.ClusterType).Items) || len(st.Routes) != len(v.Set(resource.RouteType).Items) {
			t.Errorf("client %d holds %d clusters, %d routes; view has %d, %d", i, len(st.Clusters), len(st.Routes),
				len(v.Set(resource.ClusterType).Items), len(v.Set(resource.RouteType).Items))
		}
	}
	for _, typ := range []string{"cds", "eds", "lds", "rds"} {
		if n := h.metric("wayfinder_xds_response_encodings_total", "type", typ); n != 1 {
			t.Errorf("%s serialized %v times for %d clients, want once", typ, n, len(clients))
		}
	}
}

// Delta streams share bodies the same way, and a removal (the field after
// the nonce) still gives the bytes of a marshaled response.
func TestDeltaResponsesSerializedOnceForAllStreams(t *testing.T) {
	h := newHarness(t, newTestStore(withRatings()...))
	h.syncAndWait()
	const streams = 4
	codecs := make([]*captureCodec, streams)
	clients := make([]*deltaClient, streams)
	for i := range streams {
		codecs[i] = &captureCodec{}
		clients[i] = h.connectDelta(nodeID("d-"+string(rune('a'+i))), ingressLabels, nil, codecs[i].dialOption())
		clients[i].syncEnvoy([]string{reviewsCDS, ratingsCDS}, []string{"http.80"})
	}
	for _, typ := range []string{"cds", "eds", "lds", "rds"} {
		if n := h.metric("wayfinder_xds_response_encodings_total", "type", typ); n != 1 {
			t.Errorf("%s serialized %v times for %d streams, want once", typ, n, streams)
		}
	}
	h.update("se-delete", base()...)
	for _, c := range clients {
		cds := c.next(resource.ClusterType)
		if !slices.Equal(cds.GetRemovedResources(), []string{ratingsCDS}) {
			t.Fatalf("CDS after removal: removed %v", cds.GetRemovedResources())
		}
		c.ack(cds)
		c.ack(c.next(resource.EndpointType))
	}
	for _, typ := range []string{"cds", "eds"} {
		if n := h.metric("wayfinder_xds_response_encodings_total", "type", typ); n != 2 {
			t.Errorf("%s serialized %v times after one removal on %d streams, want twice", typ, n, streams)
		}
	}
	for i := range streams {
		frames := checkFrames(t, codecs[i].captured(), func() *discovery.DeltaDiscoveryResponse { return &discovery.DeltaDiscoveryResponse{} })
		if len(frames) != 6 {
			t.Fatalf("stream %d received %d responses, want 6", i, len(frames))
		}
		for _, f := range frames {
			if f.GetNonce() == "" {
				t.Errorf("stream %d: %s response without nonce", i, snapshot.ShortType(f.GetTypeUrl()))
			}
		}
		if removed := frames[4].GetRemovedResources(); !slices.Equal(removed, []string{ratingsCDS}) {
			t.Errorf("stream %d: removal frame carries %v", i, removed)
		}
	}
}

// A response without a body (or one changed after its body was cut) is
// marshaled as usual: no frame is made for it.
func TestFrameOnlyForUnchangedCacheResponses(t *testing.T) {
	ts := snapshot.NewTypeSet(nil)
	foreign := &discovery.DiscoveryResponse{TypeUrl: resource.ClusterType, Nonce: "1"}
	if f, err := snapshot.SotwFrame(nil, foreign); f != nil || err != nil {
		t.Errorf("frame for a response without a body: %v %v", f, err)
	}
	resp := &discovery.DiscoveryResponse{VersionInfo: ts.Version, TypeUrl: resource.ClusterType}
	b := ts.SotwBody(resource.ClusterType, nil, nil)
	resp.VersionInfo = "changed"
	if f, err := snapshot.SotwFrame(b, resp); f != nil || err != nil {
		t.Errorf("frame for a changed response: %v %v", f, err)
	}
	resp.VersionInfo = ts.Version
	resp.Nonce = "7"
	f, err := snapshot.SotwFrame(b, resp)
	if err != nil || f == nil {
		t.Fatalf("no frame for the cache's response: %v", err)
	}
	want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
	if got := f.Append(nil); !bytes.Equal(got, want) || f.Len() != len(want) {
		t.Errorf("frame %x (len %d), want %x", got, f.Len(), want)
	}
}

// A response's size for the config-size metric, taken from its shared
// body, is what proto.Size gives, nonce included, in both protocols.
func TestBodySizeIsProtoSize(t *testing.T) {
	anys := []*anypb.Any{{TypeUrl: "type.googleapis.com/x", Value: []byte("abc")}, {TypeUrl: "type.googleapis.com/y", Value: make([]byte, 300)}}
	cur := snapshot.NewTypeSet(nil)
	for _, nonce := range []string{"", "1", strings.Repeat("7", 200)} {
		r := &discovery.DiscoveryResponse{VersionInfo: "v1", TypeUrl: "t", Resources: anys}
		b := cur.SotwBody("t", anys, nil)
		r.Nonce = nonce
		if got, want := snapshot.SotwSize(b, r), proto.Size(r); got != want {
			t.Errorf("SotW nonce %q: size %d, want %d", nonce, got, want)
		}
		deltas := []*discovery.Resource{{Name: "a", Version: "h", Resource: anys[0]}}
		d := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: "v1", TypeUrl: "t", Resources: deltas, RemovedResources: []string{"gone"}}
		db := cur.DeltaBody("t", deltas, []string{"gone"}, nil)
		d.Nonce = nonce
		if got, want := snapshot.DeltaSize(db, d), proto.Size(d); got != want {
			t.Errorf("delta nonce %q: size %d, want %d", nonce, got, want)
		}
	}
	// A response changed after the cache built it is measured as it is.
	r := &discovery.DiscoveryResponse{VersionInfo: "v1", TypeUrl: "t", Resources: anys}
	b := cur.SotwBody("t", anys, nil)
	r.VersionInfo = "changed"
	if got, want := snapshot.SotwSize(b, r), proto.Size(r); got != want {
		t.Errorf("changed response: size %d, want %d", got, want)
	}
}
