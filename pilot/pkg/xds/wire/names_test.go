package wire

import (
	"fmt"
	"testing"
	"unsafe"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func edsRequest(node string, n int, nonce string) *discovery.DiscoveryRequest {
	req := &discovery.DiscoveryRequest{
		Node:          &core.Node{Id: node},
		TypeUrl:       "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
		VersionInfo:   "v1",
		ResponseNonce: nonce,
	}
	for i := range n {
		req.ResourceNames = append(req.ResourceNames, fmt.Sprintf("outbound|8080||svc-%d.default.svc.cluster.local", i))
	}
	return req
}

func roundTrip(t *testing.T, c encoding.CodecV2, in *discovery.DiscoveryRequest) *discovery.DiscoveryRequest {
	t.Helper()
	data, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// Split, as gRPC hands over a message read from several frames.
	half := len(data) / 2
	out := &discovery.DiscoveryRequest{ResourceNames: []string{"stale"}, VersionInfo: "stale"}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data[:half]), mem.SliceBuffer(data[half:])}, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("decoded request differs:\n got %v\nwant %v", out, in)
	}
	return out
}

// decodeWhole decodes in, marshaled, from one buffer into out and checks
// they are equal; it returns the encoding.
func decodeWhole(t *testing.T, c encoding.CodecV2, in, out proto.Message) []byte {
	t.Helper()
	data, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("decoded request differs:\n got %v\nwant %v", out, in)
	}
	return data
}

func sameSlice(a, b []string) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

func TestRequestNamesSharedAcrossRequests(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	a := roundTrip(t, c, edsRequest("gw-1", 500, "1"))
	b := roundTrip(t, c, edsRequest("gw-2", 500, "7")) // another node, nonce: same names
	if !sameSlice(a.ResourceNames, b.ResourceNames) {
		t.Error("equal name lists were decoded twice")
	}
	other := roundTrip(t, c, edsRequest("gw-3", 501, "7"))
	if sameSlice(a.ResourceNames, other.ResourceNames) {
		t.Error("a different name list got the shared one")
	}
	// Short lists and requests without names decode as usual.
	roundTrip(t, c, edsRequest("gw-4", 3, "2"))
	roundTrip(t, c, edsRequest("gw-5", 0, ""))
}

// Gateways of two groups ACK in turns: each list is found again, whether
// it was the last matched or not, and a list the bound forgot is not
// handed out again, not even as the last one matched.
func TestRequestNamesAlternatingListsAndForgetting(t *testing.T) {
	n := &nameLists{seed: shared.seed, limit: DefaultSharedNamesBytes, lists: map[uint64]*nameList{}}
	decode := func(size int) []string {
		t.Helper()
		data, err := proto.Marshal(edsRequest("gw", size, "n"))
		if err != nil {
			t.Fatal(err)
		}
		var out discovery.DiscoveryRequest
		// As the codec does: the last list first, then the others.
		if !n.unmarshalLast(mem.BufferSlice{mem.SliceBuffer(data)}, &out) && !n.unmarshalRequest(data, &out) ||
			!proto.Equal(&out, edsRequest("gw", size, "n")) {
			t.Fatalf("list of %d not decoded: %v", size, &out)
		}
		return out.ResourceNames
	}
	a, b := decode(100), decode(101)
	for range 3 {
		if got := decode(100); !sameSlice(got, a) {
			t.Fatal("list a decoded again")
		}
		if got := decode(100); !sameSlice(got, a) {
			t.Fatal("list a, just matched, decoded again")
		}
		if got := decode(101); !sameSlice(got, b) {
			t.Fatal("list b decoded again")
		}
	}
	n.mu.Lock()
	n.limit = 0
	n.evictLocked(0)
	n.mu.Unlock()
	if n.last.Load() != nil {
		t.Error("a forgotten list is still the last matched")
	}
	if got := decode(101); sameSlice(got, b) {
		t.Error("a forgotten list was handed out again")
	}
}

func TestRequestNamesInterleavedDecodeAsUsual(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	req := edsRequest("gw-1", 100, "1")
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// Another field between two names: legal protobuf, decoded the
	// ordinary way.
	data = protowire.AppendTag(data, 4, protowire.BytesType) // type_url again (last wins)
	data = protowire.AppendString(data, req.TypeUrl)
	data = protowire.AppendTag(data, resourceNamesField, protowire.BytesType)
	data = protowire.AppendString(data, "extra")
	var out discovery.DiscoveryRequest
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.ResourceNames) != 101 || out.ResourceNames[100] != "extra" || out.TypeUrl != req.TypeUrl {
		t.Errorf("interleaved request decoded as %d names, last %q", len(out.ResourceNames), out.ResourceNames[len(out.ResourceNames)-1])
	}
}

func TestRequestNamesInvalidUTF8IsAnError(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	data, err := proto.Marshal(edsRequest("gw-1", 100, "1"))
	if err != nil {
		t.Fatal(err)
	}
	data = protowire.AppendTag(data, resourceNamesField, protowire.BytesType)
	data = protowire.AppendBytes(data, []byte{0xff, 0xfe})
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &discovery.DiscoveryRequest{}); err == nil {
		t.Error("a name that is not UTF-8 was accepted")
	}
}

func TestRequestNameListsBounded(t *testing.T) {
	n := &nameLists{seed: shared.seed, limit: DefaultSharedNamesBytes, lists: map[uint64]*nameList{}}
	for i := range maxSharedLists + 10 {
		data, err := proto.Marshal(edsRequest("gw", minSharedNames+i, ""))
		if err != nil {
			t.Fatal(err)
		}
		var out discovery.DiscoveryRequest
		if !n.unmarshalRequest(data, &out) || len(out.ResourceNames) != minSharedNames+i {
			t.Fatalf("list %d not decoded: %d names", i, len(out.ResourceNames))
		}
	}
	if len(n.lists) != maxSharedLists || len(n.order) != maxSharedLists {
		t.Errorf("kept %d lists (%d in order), want %d", len(n.lists), len(n.order), maxSharedLists)
	}
}

func TestDeltaSubscribeNamesShared(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	decode := func(node string) *discovery.DeltaDiscoveryRequest {
		in := &discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: "eds",
			ResourceNamesSubscribe: edsRequest(node, 300, "").ResourceNames, ResourceNamesUnsubscribe: []string{"gone"},
			InitialResourceVersions: map[string]string{"a": "1"}}
		out := &discovery.DeltaDiscoveryRequest{}
		decodeWhole(t, c, in, out)
		return out
	}
	a, b := decode("gw-1"), decode("gw-2")
	if !sameSlice(a.ResourceNamesSubscribe, b.ResourceNamesSubscribe) {
		t.Error("equal subscription lists were decoded twice")
	}
}

// A client sending long made-up name lists makes the shared lists hold at
// most their byte bound; a list over a quarter of it is not kept at all,
// and what the server decoded for it is freed once the request is.
func TestRequestNameListsBoundedInBytes(t *testing.T) {
	const limit = 1 << 20
	n := &nameLists{seed: shared.seed, limit: limit, lists: map[uint64]*nameList{}}
	for i := range 40 {
		data, err := proto.Marshal(edsRequest(fmt.Sprintf("gw-%d", i), 1000+i, "")) // ~60 KB each
		if err != nil {
			t.Fatal(err)
		}
		var out discovery.DiscoveryRequest
		if !n.unmarshalRequest(data, &out) || len(out.ResourceNames) != 1000+i {
			t.Fatalf("list %d not decoded: %d names", i, len(out.ResourceNames))
		}
		if n.bytes > limit {
			t.Fatalf("after list %d the shared lists hold %d bytes, over the bound of %d", i, n.bytes, limit)
		}
		var sum int64
		for _, l := range n.lists {
			sum += l.size
		}
		if sum != n.bytes || len(n.lists) != len(n.order) {
			t.Fatalf("accounting is off: %d bytes in %d lists (%d in order), counted %d", sum, len(n.lists), len(n.order), n.bytes)
		}
	}
	if len(n.lists) == 0 {
		t.Error("no list was kept")
	}

	// One list over a quarter of the bound is decoded but not kept.
	big, err := proto.Marshal(edsRequest("gw-big", 10000, "")) // ~600 KB
	if err != nil {
		t.Fatal(err)
	}
	before := n.bytes
	var a, b discovery.DiscoveryRequest
	if !n.unmarshalRequest(big, &a) || !n.unmarshalRequest(big, &b) || len(a.ResourceNames) != 10000 {
		t.Fatalf("long list not decoded: %d names", len(a.ResourceNames))
	}
	if n.bytes != before || sameSlice(a.ResourceNames, b.ResourceNames) {
		t.Errorf("a list over a quarter of the bound was kept (%d -> %d bytes)", before, n.bytes)
	}

	// A smaller bound evicts down to it; zero keeps nothing.
	shared.mu.Lock()
	saved := shared.limit
	shared.mu.Unlock()
	defer SetSharedNamesBytes(saved)
	SetSharedNamesBytes(0)
	if got := SharedNamesBytes(); got != 0 {
		t.Errorf("bound 0 keeps %d bytes", got)
	}
}

// The codec decodes any bytes exactly as protobuf does: the same error or
// the same message, whether or not the names are shared.
func FuzzCodecDecodesAsProtobuf(f *testing.F) {
	for _, n := range []int{0, 3, minSharedNames, 100} {
		b, _ := proto.Marshal(edsRequest("gw", n, "1"))
		f.Add(b)
	}
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want discovery.DiscoveryRequest
		errGot := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &got)
		errWant := proto.Unmarshal(data, &want)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("codec error %v, protobuf error %v", errGot, errWant)
		}
		if errGot == nil && !proto.Equal(&got, &want) {
			t.Fatalf("codec decoded %v, protobuf %v", &got, &want)
		}
		var gotD, wantD discovery.DeltaDiscoveryRequest
		errGot = c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &gotD)
		errWant = proto.Unmarshal(data, &wantD)
		if (errGot == nil) != (errWant == nil) || (errGot == nil && !proto.Equal(&gotD, &wantD)) {
			t.Fatalf("delta: codec %v (%v), protobuf %v (%v)", &gotD, errGot, &wantD, errWant)
		}
	})
}

// Streams naming the same shared list get one set of its names, built
// once; "*" is reported, not included; a list that is not shared has none.
func TestNameSetSharedWithTheList(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	a := roundTrip(t, c, edsRequest("gw-1", 300, "1"))
	b := roundTrip(t, c, edsRequest("gw-2", 300, "2"))
	sa, wa, oka := NameSet(a.ResourceNames)
	sb, _, okb := NameSet(b.ResourceNames)
	if !oka || !okb {
		t.Fatal("a shared list has no shared set")
	}
	if wa {
		t.Error("a list without \"*\" reported as wildcard")
	}
	if len(sa) != 300 {
		t.Errorf("set has %d names, want 300", len(sa))
	}
	if fmt.Sprintf("%p", sa) != fmt.Sprintf("%p", sb) {
		t.Error("two streams naming the same list got two sets")
	}
	for _, n := range a.ResourceNames {
		if _, ok := sa[n]; !ok {
			t.Fatalf("set lacks %s", n)
		}
	}

	w := edsRequest("gw-3", 300, "3")
	w.ResourceNames[7] = "*"
	wr := roundTrip(t, c, w)
	sw, wild, ok := NameSet(wr.ResourceNames)
	if !ok || !wild || len(sw) != 299 {
		t.Errorf("list naming \"*\": ok %v wildcard %v with %d names; want true, true, 299", ok, wild, len(sw))
	}
	if _, in := sw["*"]; in {
		t.Error("\"*\" is in the set")
	}

	short := roundTrip(t, c, edsRequest("gw-4", 3, "1"))
	if _, _, ok := NameSet(short.ResourceNames); ok {
		t.Error("a short list, decoded as usual, has a shared set")
	}
	if _, _, ok := NameSet([]string{"made", "here"}); ok {
		t.Error("a list the codec never saw has a shared set")
	}
}

// A long request that arrives in one buffer is decoded from it; one split
// over several is joined in a buffer sized to it (gRPC's default pool
// would give a 60 KB request a 1 MiB buffer).
func TestLongRequestsDecodeWithoutOversizedBuffers(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	in := edsRequest("gw-1", 1000, "1")
	data := decodeWhole(t, c, in, &discovery.DiscoveryRequest{})
	roundTrip(t, c, in) // split in two: joined
	b := requestPool.Get(len(data))
	defer requestPool.Put(b)
	if len(data) < 32<<10 || cap(*b) >= 2*len(data) {
		t.Errorf("a %d-byte request is joined in a %d-byte buffer", len(data), cap(*b))
	}
}

// A request split across buffers anywhere decodes as protobuf does; when
// its names are the list matched last it gets that list without being
// joined, and when they are not (another list, one name more, a field
// between the names) it is joined and decoded as before.
func TestSplitRequestsMatchTheLastList(t *testing.T) {
	c := Codec{Base: encoding.GetCodecV2(grpcproto.Name)}
	list := roundTrip(t, c, edsRequest("gw-1", 100, "1")).ResourceNames
	ack := edsRequest("", 100, "2")
	ack.Node = nil
	longer := edsRequest("", 101, "3")
	longer.Node = nil
	interleaved, err := proto.Marshal(ack)
	if err != nil {
		t.Fatal(err)
	}
	interleaved = protowire.AppendTag(interleaved, resourceNamesField, protowire.BytesType)
	interleaved = protowire.AppendString(interleaved, "extra")
	ackData, err := proto.Marshal(ack)
	if err != nil {
		t.Fatal(err)
	}
	longerData, err := proto.Marshal(longer)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		shared bool
	}{
		{"the last list", ackData, true},
		{"one name more", longerData, false},
		{"a name after other fields", interleaved, false},
	} {
		for cut := 1; cut < len(tc.data); cut += 7 {
			for _, parts := range [][][]byte{
				{tc.data[:cut], tc.data[cut:]},
				{tc.data[:cut/2], tc.data[cut/2 : cut], tc.data[cut:]},
			} {
				var in mem.BufferSlice
				for _, p := range parts {
					in = append(in, mem.SliceBuffer(p))
				}
				var got, want discovery.DiscoveryRequest
				if err := c.Unmarshal(in, &got); err != nil {
					t.Fatalf("%s, cut at %d: %v", tc.name, cut, err)
				}
				if err := proto.Unmarshal(tc.data, &want); err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(&got, &want) {
					t.Fatalf("%s, cut at %d: decoded %d names, want %d", tc.name, cut, len(got.ResourceNames), len(want.ResourceNames))
				}
				// The names are the last list's whenever the fields before
				// them are in the first buffer.
				if before := len(ackData) - len(shared.last.Load().all); tc.shared && cut > before {
					if !sameSlice(got.ResourceNames, list) {
						t.Fatalf("%s, cut at %d: the list was decoded again", tc.name, cut)
					}
					if !shared.unmarshalLast(in, &discovery.DiscoveryRequest{}) {
						t.Fatalf("%s, cut at %d: joined to be decoded", tc.name, cut)
					}
				}
			}
		}
	}
}
