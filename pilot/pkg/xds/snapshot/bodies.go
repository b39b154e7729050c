package snapshot

import (
	"slices"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
)

// maxBodies bounds the distinct response bodies a TypeSet keeps per
// protocol. Proxies of one group normally ask for the same names, so one
// or two are live; past the bound the oldest is forgotten (responses
// already holding it keep it).
const maxBodies = 8

// Body is one response's bytes without the nonce, serialized once, on the
// first send that needs them, and written by every stream that is sent
// the same response (same type set, same resources, same removals). Head
// holds the fields numbered below the nonce's, tail those above, so a
// frame is byte for byte what marshaling the response would give.
type Body struct {
	delta   bool
	typeURL string
	version string
	// What the response holds, to find an equal response's body and to
	// check that a response about to be sent still matches.
	anys []*anypb.Any // SotW
	// Deltas and Removed are a delta response's resources and removals,
	// shared by every response of the body. Read-only.
	Deltas  []*discovery.Resource
	Removed []string

	once sync.Once
	// head is in parts: a large resource's bytes are its Any's own
	// (see bodyenc.go).
	head    [][]byte
	tail    []byte
	err     error
	encoded func(typeURL string) // counts serializations

	sizeOnce sync.Once
	size     int // the serialized size without the nonce
}

// sizeWith returns the size of a response with this body and nonce, as
// proto.Size would give it, computed once per body rather than once per
// stream (walking a thousand resources for every stream's size metric
// was a visible part of a push).
func (b *Body) sizeWith(nonce string) int {
	b.sizeOnce.Do(func() {
		if !b.delta {
			b.size = proto.Size(&discovery.DiscoveryResponse{VersionInfo: b.version, Resources: b.anys, TypeUrl: b.typeURL})
		} else {
			b.size = proto.Size(&discovery.DeltaDiscoveryResponse{SystemVersionInfo: b.version, Resources: b.Deltas, TypeUrl: b.typeURL, RemovedResources: b.Removed})
		}
	})
	if nonce == "" {
		return b.size
	}
	// The nonce is field 5 in both messages: one tag byte, its length, its bytes.
	return b.size + 1 + protowire.SizeVarint(uint64(len(nonce))) + len(nonce)
}

// bodies are a TypeSet's bodies, newest last.
type bodies struct {
	mu    sync.Mutex
	sotw  []*Body
	delta []*Body
}

// SotwBody returns the shared body of a SotW response of cur carrying
// anys; encoded, when set, is called once the body is serialized (for a
// metric).
func (cur *TypeSet) SotwBody(typeURL string, anys []*anypb.Any, encoded func(string)) *Body {
	cur.bodies.mu.Lock()
	defer cur.bodies.mu.Unlock()
	for _, b := range cur.bodies.sotw {
		if b.typeURL == typeURL && sameSlice(b.anys, anys) {
			return b
		}
	}
	b := &Body{typeURL: typeURL, version: cur.Version, anys: anys, encoded: encoded}
	cur.bodies.sotw = appendBounded(cur.bodies.sotw, b)
	return b
}

// DeltaBody returns the shared body of a delta response of cur carrying
// updates and removed.
func (cur *TypeSet) DeltaBody(typeURL string, updates []*discovery.Resource, removed []string, encoded func(string)) *Body {
	cur.bodies.mu.Lock()
	defer cur.bodies.mu.Unlock()
	for _, b := range cur.bodies.delta {
		if b.typeURL == typeURL && sameSlice(b.Deltas, updates) && slices.Equal(b.Removed, removed) {
			return b
		}
	}
	b := &Body{delta: true, typeURL: typeURL, version: cur.Version, Deltas: updates, Removed: removed, encoded: encoded}
	cur.bodies.delta = appendBounded(cur.bodies.delta, b)
	return b
}

func appendBounded(s []*Body, b *Body) []*Body {
	if len(s) >= maxBodies {
		s = slices.Delete(s, 0, 1)
	}
	return append(s, b)
}

// sameSlice compares element pointers: the shared Anys and delta wrappers
// are interned, so equal content is the same pointer.
func sameSlice[T any](a, b []*T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// frame returns the wire form of a response with this body and nonce,
// serializing the body if no stream has yet.
func (b *Body) frame(nonce string) (*wire.Frame, error) {
	b.once.Do(b.encode)
	if b.err != nil {
		return nil, b.err
	}
	return &wire.Frame{Head: b.head, Nonce: nonce, Tail: b.tail}, nil
}

func (b *Body) encode() {
	opts := proto.MarshalOptions{Deterministic: true}
	var ok bool
	if !b.delta {
		if b.head, ok = sotwParts(b.version, b.typeURL, b.anys); !ok {
			var whole []byte
			whole, b.err = opts.Marshal(&discovery.DiscoveryResponse{VersionInfo: b.version, Resources: b.anys, TypeUrl: b.typeURL})
			b.head = [][]byte{whole}
		}
	} else {
		if b.head, ok = deltaParts(b.version, b.typeURL, b.Deltas); !ok {
			var whole []byte
			whole, b.err = opts.Marshal(&discovery.DeltaDiscoveryResponse{SystemVersionInfo: b.version, Resources: b.Deltas, TypeUrl: b.typeURL})
			b.head = [][]byte{whole}
		}
		if b.err == nil {
			b.tail, b.err = opts.Marshal(&discovery.DeltaDiscoveryResponse{RemovedResources: b.Removed})
		}
	}
	if b.err == nil && b.encoded != nil {
		b.encoded(b.typeURL)
	}
}

// matchesSotw reports whether r is still the response b was made for (go-
// control-plane sets only its nonce).
func (b *Body) matchesSotw(r *discovery.DiscoveryResponse) bool {
	return !b.delta && r.GetVersionInfo() == b.version && r.GetTypeUrl() == b.typeURL &&
		sameSlice(r.GetResources(), b.anys) && r.GetControlPlane() == nil && !r.GetCanary() && r.GetResourceErrors() == nil
}

// matchesDelta is matchesSotw for delta responses.
func (b *Body) matchesDelta(r *discovery.DeltaDiscoveryResponse) bool {
	return b.delta && r.GetSystemVersionInfo() == b.version && r.GetTypeUrl() == b.typeURL &&
		sameSlice(r.GetResources(), b.Deltas) && slices.Equal(r.GetRemovedResources(), b.Removed) &&
		r.GetControlPlane() == nil && r.GetRemovedResourceNames() == nil && r.GetResourceErrors() == nil
}

// SotwFrame returns the frame to write for r, or nil to marshal r as
// usual (no body, or r changed since its body was cut).
func SotwFrame(b *Body, r *discovery.DiscoveryResponse) (*wire.Frame, error) {
	if b == nil || !b.matchesSotw(r) {
		return nil, nil
	}
	return b.frame(r.GetNonce())
}

// DeltaFrame is SotwFrame for delta responses.
func DeltaFrame(b *Body, r *discovery.DeltaDiscoveryResponse) (*wire.Frame, error) {
	if b == nil || !b.matchesDelta(r) {
		return nil, nil
	}
	return b.frame(r.GetNonce())
}

// SotwSize is proto.Size(r), from its body when r is unchanged since.
func SotwSize(b *Body, r *discovery.DiscoveryResponse) int {
	if b != nil && b.matchesSotw(r) {
		return b.sizeWith(r.GetNonce())
	}
	return proto.Size(r)
}

// DeltaSize is SotwSize for delta responses.
func DeltaSize(b *Body, r *discovery.DeltaDiscoveryResponse) int {
	if b != nil && b.matchesDelta(r) {
		return b.sizeWith(r.GetNonce())
	}
	return proto.Size(r)
}
