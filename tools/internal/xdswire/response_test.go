package xdswire

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func cluster(t *testing.T, name string) *anypb.Any {
	t.Helper()
	a, err := anypb.New(&clusterv3.Cluster{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadResponseFramingAndOrderFreeSum(t *testing.T) {
	a, b := cluster(t, "a"), cluster(t, "b")
	r1, err := ReadResponse(marshal(t, &discoveryv3.DiscoveryResponse{
		VersionInfo: "v1", Nonce: "n1", TypeUrl: resource.ClusterType, Resources: []*anypb.Any{a, b},
	}), false)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Version != "v1" || r1.Nonce != "n1" || r1.TypeURL != resource.ClusterType || len(r1.Resources) != 2 {
		t.Fatalf("framing: %+v", r1)
	}
	var back anypb.Any
	if err := proto.Unmarshal(r1.Resources[1], &back); err != nil || !proto.Equal(&back, b) {
		t.Fatalf("second resource does not round-trip: %v", err)
	}
	// Same resources in another order, another version and nonce: same sum.
	r2, err := ReadResponse(marshal(t, &discoveryv3.DiscoveryResponse{
		VersionInfo: "v2", Nonce: "n2", TypeUrl: resource.ClusterType, Resources: []*anypb.Any{b, a},
	}), false)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Sum != r2.Sum {
		t.Error("reordered resources hash differently")
	}
	r3, err := ReadResponse(marshal(t, &discoveryv3.DiscoveryResponse{
		TypeUrl: resource.ClusterType, Resources: []*anypb.Any{a, cluster(t, "c")},
	}), false)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Sum == r1.Sum {
		t.Error("different resources hash the same")
	}
}

func TestReadDeltaResponse(t *testing.T) {
	res := &discoveryv3.Resource{Name: "a", Version: "1", Resource: cluster(t, "a")}
	b := marshal(t, &discoveryv3.DeltaDiscoveryResponse{
		SystemVersionInfo: "s1", Nonce: "n", TypeUrl: resource.ClusterType,
		Resources: []*discoveryv3.Resource{res}, RemovedResources: []string{"x", "y"},
	})
	r, err := ReadResponse(b, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "s1" || r.Nonce != "n" || len(r.Resources) != 1 || len(r.Removed) != 2 || r.Removed[0] != "x" {
		t.Fatalf("delta framing: %+v", r)
	}
	only, err := ReadResponse(marshal(t, &discoveryv3.DeltaDiscoveryResponse{
		TypeUrl: resource.ClusterType, Resources: []*discoveryv3.Resource{res},
	}), true)
	if err != nil {
		t.Fatal(err)
	}
	if only.Sum == r.Sum {
		t.Error("removed names do not change the sum")
	}
}

func TestReadResponseErrors(t *testing.T) {
	if _, err := ReadResponse([]byte{0xff}, false); err == nil {
		t.Error("garbage accepted")
	}
	if _, err := ReadResponse(marshal(t, &discoveryv3.DiscoveryResponse{VersionInfo: "v"}), false); err == nil {
		t.Error("response without type_url accepted")
	}
}

type decoder struct{ got []byte }

func (d *decoder) DecodeWire(b []byte) error { d.got = append([]byte(nil), b...); return nil }

func TestCodec(t *testing.T) {
	c := Codec{}
	req := &discoveryv3.DiscoveryRequest{TypeUrl: resource.ClusterType, VersionInfo: "v"}
	out, err := c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var back discoveryv3.DiscoveryRequest
	if err := c.Unmarshal(out, &back); err != nil || !proto.Equal(req, &back) {
		t.Fatalf("proto round trip: %v %v", err, &back)
	}
	frame := &Frame{Bytes: []byte("abc")}
	out, err = c.Marshal(frame)
	if err != nil || string(out.Materialize()) != "abc" {
		t.Fatalf("frame: %v %q", err, out.Materialize())
	}
	// Pieces go out in order, empty ones left out, without being joined.
	out, err = c.Marshal(&Pieces{Parts: [][]byte{[]byte("ab"), nil, []byte("cd")}})
	if err != nil || len(out) != 2 || string(out.Materialize()) != "abcd" {
		t.Fatalf("pieces: %v, %d buffers, %q", err, len(out), out.Materialize())
	}
	// Split input is joined before the decoder sees it.
	var d decoder
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer("ab"), mem.SliceBuffer("c")}, &d); err != nil || string(d.got) != "abc" {
		t.Fatalf("decoder got %q, %v", d.got, err)
	}
	// The join buffer is reused: a longer message after a shorter one and a
	// shorter after a longer each see exactly their own bytes.
	for _, parts := range [][]string{{"long", "er message"}, {"x", "y"}, {"", "z"}} {
		var in mem.BufferSlice
		for _, p := range parts {
			in = append(in, mem.SliceBuffer(p))
		}
		if err := c.Unmarshal(in, &d); err != nil || string(d.got) != strings.Join(parts, "") {
			t.Fatalf("decoder got %q, %v; want %q", d.got, err, strings.Join(parts, ""))
		}
	}
	if _, err := c.Marshal(42); err == nil {
		t.Error("marshalled an int")
	}
}
