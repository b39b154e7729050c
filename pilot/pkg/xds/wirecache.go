package xds

import (
	"runtime"
	"slices"
	"sync"
	"weak"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
)

// maxBodies bounds the distinct response bodies a typeSet keeps per
// protocol. Proxies of one group normally ask for the same names, so one
// or two are live; past the bound the oldest is forgotten (responses
// already holding it keep it).
const maxBodies = 8

// body is one response's bytes without the nonce, serialized once, on the
// first send that needs them, and written by every stream that is sent
// the same response (same type set, same resources, same removals). Head
// holds the fields numbered below the nonce's, tail those above, so a
// frame is byte for byte what marshaling the response would give.
type body struct {
	delta   bool
	typeURL string
	version string
	// What the response holds, to find an equal response's body and to
	// check that a response about to be sent still matches.
	anys    []*anypb.Any          // SotW
	deltas  []*discovery.Resource // delta
	removed []string              // delta

	once       sync.Once
	head, tail []byte
	err        error
	encoded    func(typeURL string) // counts serializations

	sizeOnce sync.Once
	size     int // the serialized size without the nonce
}

// sizeWith returns the size of a response with this body and nonce, as
// proto.Size would give it, computed once per body rather than once per
// stream (walking a thousand resources for every stream's size metric
// was a visible part of a push).
func (b *body) sizeWith(nonce string) int {
	b.sizeOnce.Do(func() {
		if !b.delta {
			b.size = proto.Size(&discovery.DiscoveryResponse{VersionInfo: b.version, Resources: b.anys, TypeUrl: b.typeURL})
		} else {
			b.size = proto.Size(&discovery.DeltaDiscoveryResponse{SystemVersionInfo: b.version, Resources: b.deltas, TypeUrl: b.typeURL, RemovedResources: b.removed})
		}
	})
	if nonce == "" {
		return b.size
	}
	// The nonce is field 5 in both messages: one tag byte, its length, its bytes.
	return b.size + 1 + protowire.SizeVarint(uint64(len(nonce))) + len(nonce)
}

// bodies are a typeSet's bodies, newest last.
type bodies struct {
	mu    sync.Mutex
	sotw  []*body
	delta []*body
}

// sotwBody returns the shared body of a SotW response of cur carrying anys.
func (cur *typeSet) sotwBody(typeURL string, anys []*anypb.Any, encoded func(string)) *body {
	cur.bodies.mu.Lock()
	defer cur.bodies.mu.Unlock()
	for _, b := range cur.bodies.sotw {
		if b.typeURL == typeURL && sameSlice(b.anys, anys) {
			return b
		}
	}
	b := &body{typeURL: typeURL, version: cur.version, anys: anys, encoded: encoded}
	cur.bodies.sotw = appendBounded(cur.bodies.sotw, b)
	return b
}

// deltaBody returns the shared body of a delta response of cur carrying
// updates and removed.
func (cur *typeSet) deltaBody(typeURL string, updates []*discovery.Resource, removed []string, encoded func(string)) *body {
	cur.bodies.mu.Lock()
	defer cur.bodies.mu.Unlock()
	for _, b := range cur.bodies.delta {
		if b.typeURL == typeURL && sameSlice(b.deltas, updates) && slices.Equal(b.removed, removed) {
			return b
		}
	}
	b := &body{delta: true, typeURL: typeURL, version: cur.version, deltas: updates, removed: removed, encoded: encoded}
	cur.bodies.delta = appendBounded(cur.bodies.delta, b)
	return b
}

func appendBounded(s []*body, b *body) []*body {
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
func (b *body) frame(nonce string) (*wire.Frame, error) {
	b.once.Do(b.encode)
	if b.err != nil {
		return nil, b.err
	}
	return &wire.Frame{Head: b.head, Nonce: nonce, Tail: b.tail}, nil
}

func (b *body) encode() {
	opts := proto.MarshalOptions{Deterministic: true}
	if !b.delta {
		b.head, b.err = opts.Marshal(&discovery.DiscoveryResponse{VersionInfo: b.version, Resources: b.anys, TypeUrl: b.typeURL})
	} else {
		b.head, b.err = opts.Marshal(&discovery.DeltaDiscoveryResponse{SystemVersionInfo: b.version, Resources: b.deltas, TypeUrl: b.typeURL})
		if b.err == nil {
			b.tail, b.err = opts.Marshal(&discovery.DeltaDiscoveryResponse{RemovedResources: b.removed})
		}
	}
	if b.err == nil && b.encoded != nil {
		b.encoded(b.typeURL)
	}
}

// matchesSotw reports whether r is still the response b was made for (go-
// control-plane sets only its nonce).
func (b *body) matchesSotw(r *discovery.DiscoveryResponse) bool {
	return !b.delta && r.GetVersionInfo() == b.version && r.GetTypeUrl() == b.typeURL &&
		sameSlice(r.GetResources(), b.anys) && r.GetControlPlane() == nil && !r.GetCanary() && r.GetResourceErrors() == nil
}

// matchesDelta is matchesSotw for delta responses.
func (b *body) matchesDelta(r *discovery.DeltaDiscoveryResponse) bool {
	return b.delta && r.GetSystemVersionInfo() == b.version && r.GetTypeUrl() == b.typeURL &&
		sameSlice(r.GetResources(), b.deltas) && slices.Equal(r.GetRemovedResources(), b.removed) &&
		r.GetControlPlane() == nil && r.GetRemovedResourceNames() == nil && r.GetResourceErrors() == nil
}

// bodyTable maps a response the cache built to its shared body until a
// stream sends it. Keys are weak, so a response that is never sent (its
// stream closed, or a newer request replaced it) drops out of the table
// when it is collected.
type bodyTable[T any] struct {
	mu sync.Mutex
	m  map[weak.Pointer[T]]*body
}

func (t *bodyTable[T]) put(r *T, b *body) {
	k := weak.Make(r)
	t.mu.Lock()
	if t.m == nil {
		t.m = map[weak.Pointer[T]]*body{}
	}
	t.m[k] = b
	t.mu.Unlock()
	runtime.AddCleanup(r, t.drop, k)
}

// peek returns r's body without forgetting it; nil if r has none.
func (t *bodyTable[T]) peek(r *T) *body {
	k := weak.Make(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// take returns and forgets r's body; nil if r has none.
func (t *bodyTable[T]) take(r *T) *body {
	k := weak.Make(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.m[k]
	delete(t.m, k)
	return b
}

func (t *bodyTable[T]) drop(k weak.Pointer[T]) {
	t.mu.Lock()
	delete(t.m, k)
	t.mu.Unlock()
}

// len is the number of responses waiting to be sent (for tests).
func (t *bodyTable[T]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// wireBodies are the server's side tables from responses to bodies.
type wireBodies struct {
	sotw  bodyTable[discovery.DiscoveryResponse]
	delta bodyTable[discovery.DeltaDiscoveryResponse]
}

// countEncoding counts one serialized response body.
func (s *DiscoveryServer) countEncoding(typeURL string) {
	s.metrics.encodings.WithLabelValues(metricType(typeURL)).Inc()
}

// sotwFrame returns the frame to write for r, or nil to marshal r as
// usual (a response the cache did not build, or one changed since).
func (w *wireBodies) sotwFrame(r *discovery.DiscoveryResponse) (*wire.Frame, error) {
	b := w.sotw.take(r)
	if b == nil || !b.matchesSotw(r) {
		return nil, nil
	}
	return b.frame(r.GetNonce())
}

// deltaFrame is sotwFrame for delta responses.
func (w *wireBodies) deltaFrame(r *discovery.DeltaDiscoveryResponse) (*wire.Frame, error) {
	b := w.delta.take(r)
	if b == nil || !b.matchesDelta(r) {
		return nil, nil
	}
	return b.frame(r.GetNonce())
}

// sotwSize is proto.Size(r), from r's shared body when the cache built r
// and it is unchanged.
func (w *wireBodies) sotwSize(r *discovery.DiscoveryResponse) int {
	if b := w.sotw.peek(r); b != nil && b.matchesSotw(r) {
		return b.sizeWith(r.GetNonce())
	}
	return proto.Size(r)
}

// deltaSize is sotwSize for delta responses.
func (w *wireBodies) deltaSize(r *discovery.DeltaDiscoveryResponse) int {
	if b := w.delta.peek(r); b != nil && b.matchesDelta(r) {
		return b.sizeWith(r.GetNonce())
	}
	return proto.Size(r)
}
