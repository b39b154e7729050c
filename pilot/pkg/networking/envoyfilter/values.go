package envoyfilter

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/xds"
)

// Values caches the Envoy messages built from patch values, so that a
// push that applies the same filters to many gateway configurations
// decodes each value once. Keep one per push (or per set of filter
// objects): it is keyed by the patch's address, and objects read from a
// config store are never mutated. Safe for concurrent use; the zero value
// is not usable, use NewValues. A nil *Values builds every time.
type Values struct {
	mu sync.Mutex
	m  map[*networking.EnvoyFilter_EnvoyConfigObjectPatch]builtValue
}

// NewValues returns an empty cache.
func NewValues() *Values {
	return &Values{m: map[*networking.EnvoyFilter_EnvoyConfigObjectPatch]builtValue{}}
}

type builtValue struct {
	value proto.Message // shared: only ever cloned, never changed
	err   error         // the value cannot be built
	loose error         // built, but fields were dropped
}

func (v *Values) build(cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) builtValue {
	if v != nil {
		v.mu.Lock()
		b, ok := v.m[cp]
		v.mu.Unlock()
		if ok {
			return b
		}
	}
	var b builtValue
	// Not strict, as istiod: a value written for a newer Envoy still
	// applies, its unknown fields dropped.
	b.value, b.err = xds.BuildXDSObjectFromStruct(cp.GetApplyTo(), cp.GetPatch().GetValue(), false)
	if b.err != nil {
		b.err = fmt.Errorf("not a valid %s value: %v", cp.GetApplyTo(), b.err)
	} else if _, err := xds.BuildXDSObjectFromStruct(cp.GetApplyTo(), cp.GetPatch().GetValue(), true); err != nil {
		b.loose = fmt.Errorf("ignored, not a field of %s: %v", cp.GetApplyTo(), err)
	}
	if v != nil {
		v.mu.Lock()
		v.m[cp] = b
		v.mu.Unlock()
	}
	return b
}
