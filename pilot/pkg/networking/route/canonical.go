package route

import (
	"maps"
	"runtime"
	"sync"
	"weak"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// canon shares equal parts of translated routes. A gateway's routes repeat
// the same few matches ("/", a canary header), retry policies and timeouts
// thousands of times; translation output is only marshaled, never edited,
// so equal parts can be one object. Parts are equal when their
// deterministic encodings are. The table does not keep a part alive: once
// no route holds it, it is collected and its entry removed, so the table
// holds only what some kept route uses.
type canon[S any, P interface {
	*S
	proto.Message
}] struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[S]
	// peak is the most entries m held since it was made: a Go map keeps
	// the buckets of its largest size, so once most parts are gone (a
	// VirtualService of 100,000 routes removed: 3.6 MB of buckets) the
	// entries left are copied into a map of their size.
	peak int
}

// get returns the part equal to m that routes already share, or m, which
// is shared from now on.
func (c *canon[S, P]) get(m P) P {
	if m == nil {
		return m
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return m
	}
	key := string(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.m[key]; ok {
		if v := w.Value(); v != nil {
			return P(v)
		}
	}
	if c.m == nil {
		c.m = map[string]weak.Pointer[S]{}
	}
	c.m[key] = weak.Make((*S)(m))
	c.peak = max(c.peak, len(c.m))
	runtime.AddCleanup((*S)(m), c.forget, key)
	return m
}

// forget drops key's entry once its part is gone (and not replaced by a
// newer one since).
func (c *canon[S, P]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.m[key]; ok && w.Value() == nil {
		delete(c.m, key)
	}
	if c.peak > 1024 && len(c.m) < c.peak/4 {
		m := make(map[string]weak.Pointer[S], len(c.m))
		maps.Copy(m, c.m)
		c.m, c.peak = m, len(m)
	}
}

// size is the number of entries (for tests).
func (c *canon[S, P]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

var (
	sharedMatches         canon[routev3.RouteMatch, *routev3.RouteMatch]
	sharedRetries         canon[routev3.RetryPolicy, *routev3.RetryPolicy]
	sharedStreamDurations canon[routev3.RouteAction_MaxStreamDuration, *routev3.RouteAction_MaxStreamDuration]
	sharedNoTimeout       = durationpb.New(0)
	sharedWeights         = func() (w [101]*wrapperspb.UInt32Value) {
		for i := range w {
			w[i] = wrapperspb.UInt32(uint32(i))
		}
		return w
	}()
)

// weight returns a shared wrapper for the common weights (0-100).
func weight(v uint32) *wrapperspb.UInt32Value {
	if int(v) < len(sharedWeights) {
		return sharedWeights[v]
	}
	return wrapperspb.UInt32(v)
}
