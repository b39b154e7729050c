package snapshot

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Response bodies built in parts are byte for byte the deterministic
// marshaling of the response, in both protocols and whatever the
// resources' sizes; a large resource's bytes are its Any's own, not a
// copy; and a resource that is more than a plain Any falls back to
// marshaling, with the same bytes.
func TestBodyPartsAreTheMarshaling(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 11))
	randAny := func() *anypb.Any {
		a := &anypb.Any{}
		if rng.IntN(5) > 0 {
			a.TypeUrl = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
		}
		switch rng.IntN(4) {
		case 0: // empty value
		case 1:
			a.Value = bytes.Repeat([]byte{byte(rng.IntN(256))}, sharedPartMin+rng.IntN(3*sharedPartMin))
		default:
			a.Value = bytes.Repeat([]byte{byte(rng.IntN(256))}, 1+rng.IntN(sharedPartMin))
		}
		if rng.IntN(20) == 0 {
			a.ProtoReflect().SetUnknown([]byte{0xf8, 0x7f, 0x01}) // not plain
		}
		return a
	}
	for i := range 200 {
		cur := NewTypeSet(nil) // a set's bodies share its version
		var anys []*anypb.Any
		var deltas []*discovery.Resource
		for j := range rng.IntN(6) {
			a := randAny()
			anys = append(anys, a)
			r := &discovery.Resource{Name: fmt.Sprintf("r%d", j), Version: "v", Resource: a}
			switch rng.IntN(6) {
			case 0:
				r.Name = ""
			case 1:
				r.Version = ""
			case 2:
				r.Resource = nil
			case 3:
				r.Aliases = []string{"alias"} // more than the fields written by hand
			}
			deltas = append(deltas, r)
		}
		version := []string{"", "v1"}[rng.IntN(2)]
		typeURL := []string{"", "t"}[rng.IntN(2)]
		nonce := fmt.Sprint(i)
		cur.Version = version
		for _, delta := range []bool{false, true} {
			var want []byte
			var b *Body
			if delta {
				b = cur.DeltaBody(typeURL, deltas, []string{"gone"}, nil)
				want, _ = proto.MarshalOptions{Deterministic: true}.Marshal(&discovery.DeltaDiscoveryResponse{
					SystemVersionInfo: version, Resources: deltas, TypeUrl: typeURL, RemovedResources: []string{"gone"}, Nonce: nonce})
			} else {
				b = cur.SotwBody(typeURL, anys, nil)
				want, _ = proto.MarshalOptions{Deterministic: true}.Marshal(&discovery.DiscoveryResponse{
					VersionInfo: version, Resources: anys, TypeUrl: typeURL, Nonce: nonce})
			}
			f, err := b.frame(nonce)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Append(nil); !bytes.Equal(got, want) || f.Len() != len(want) {
				t.Fatalf("case %d (delta %v): frame of %d bytes (Len %d) differs from the marshaling's %d", i, delta, len(got), f.Len(), len(want))
			}
			// Large values of plain resources are the Any's own bytes.
			if len(f.Head) > 1 {
				for _, a := range anys {
					if len(a.GetValue()) < sharedPartMin {
						continue
					}
					shared := false
					for _, p := range f.Head {
						shared = shared || (len(p) == len(a.GetValue()) && &p[0] == &a.GetValue()[0])
					}
					if !shared && !delta {
						t.Fatalf("case %d: a %d-byte resource was copied into the body", i, len(a.GetValue()))
					}
				}
			}
		}
	}
}

// A body made of a single large resource (a gateway's route
// configuration) holds no copy of it.
func TestLargeResourceIsNotCopiedIntoItsBody(t *testing.T) {
	a := &anypb.Any{TypeUrl: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", Value: make([]byte, 1<<20)}
	cur := NewTypeSet(nil)
	for _, b := range []*Body{cur.SotwBody("t", []*anypb.Any{a}, nil), cur.DeltaBody("t", []*discovery.Resource{{Name: "http.80", Version: "h", Resource: a}}, nil, nil)} {
		f, err := b.frame("1")
		if err != nil {
			t.Fatal(err)
		}
		copied := 0
		for _, p := range f.Head {
			if len(p) > 0 && &p[0] != &a.Value[0] {
				copied += len(p)
			}
		}
		if copied > 1024 {
			t.Errorf("delta %v: %d bytes of the body are copies", b.delta, copied)
		}
	}
}
