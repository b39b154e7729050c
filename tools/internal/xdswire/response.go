package xdswire

import (
	"errors"
	"fmt"
	"hash/maphash"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of envoy.service.discovery.v3.DiscoveryResponse and
// DeltaDiscoveryResponse that the tools read.
const (
	sotwVersion   = 1
	sotwResources = 2
	sotwTypeURL   = 4
	sotwNonce     = 5

	deltaVersion   = 1
	deltaResources = 2
	deltaTypeURL   = 4
	deltaNonce     = 5
	deltaRemoved   = 6
)

// Response is the framing of a (delta) discovery response: everything but
// the resources, which stay as sub-slices of the wire bytes, and a hash of
// them. Resources and Removed alias the input; copy them to keep them.
type Response struct {
	Version string
	TypeURL string
	Nonce   string
	// Resources are the serialized resources: Any for state of the world,
	// Resource for delta.
	Resources [][]byte
	// Removed are a delta response's removed resource names.
	Removed []string
	// Sum hashes Resources and Removed (not version or nonce) as a
	// multiset: equal sums mean equal content in any order. Servers built
	// on go-control-plane's snapshot cache list a state-of-the-world
	// response's resources in map order, so the same config arrives in a
	// different order on every stream; an ordered hash would parse it once
	// per gateway.
	Sum uint64
}

// Resources and removed names hash with different seeds, so a removed name
// never cancels out a resource.
var seed, removedSeed = maphash.MakeSeed(), maphash.MakeSeed()

// ReadResponse reads a DiscoveryResponse (delta false) or a
// DeltaDiscoveryResponse (delta true).
func ReadResponse(b []byte, delta bool) (Response, error) {
	var r Response
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, fmt.Errorf("xdswire: bad tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, fmt.Errorf("xdswire: bad field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return r, fmt.Errorf("xdswire: bad field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == sotwVersion: // same number in both messages
			r.Version = string(v)
		case num == sotwTypeURL:
			r.TypeURL = string(v)
		case num == sotwNonce:
			r.Nonce = string(v)
		case num == sotwResources:
			r.Resources = append(r.Resources, v)
			r.Sum += maphash.Bytes(seed, v)
		case delta && num == deltaRemoved:
			r.Removed = append(r.Removed, string(v))
			r.Sum += maphash.Bytes(removedSeed, v)
		}
	}
	if r.TypeURL == "" {
		return r, errors.New("xdswire: response without type_url")
	}
	return r, nil
}
