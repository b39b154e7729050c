package wire

import (
	"bytes"
	"hash/maphash"
	"sync"
	"unicode/utf8"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// resourceNamesField is the field number of resource_names in
// DiscoveryRequest and of resource_names_subscribe in
// DeltaDiscoveryRequest.
const resourceNamesField = 3

// minSharedNames is the number of resource names from which a request's
// names are shared; shorter lists are decoded as usual.
const minSharedNames = 32

// maxSharedLists bounds how many distinct name lists are kept.
const maxSharedLists = 64

// nameLists shares the resource names of requests. A gateway's EDS
// request names every cluster (5,000 names, 300 KB, at 5,000 services),
// and every gateway of a group sends the same list: with its SotW
// subscription and every ACK, or in its delta subscription. Decoding each
// into thousands of new strings was a sixth of the server's CPU (a fifth
// of a delta server's cold start). Requests whose names are byte-for-byte
// those of an earlier request get the same slice, which is never modified
// (go-control-plane and the cache only read it).
type nameLists struct {
	mu    sync.Mutex
	seed  maphash.Seed
	lists map[uint64]*nameList
	order []uint64 // insertion order, for eviction
}

type nameList struct {
	raw   []byte // the resource_names fields as received
	names []string
}

var shared = &nameLists{seed: maphash.MakeSeed(), lists: map[uint64]*nameList{}}

// unmarshalRequest decodes b into req, sharing a long resource_names list
// with earlier requests. It reports false when the request is not one it
// handles (few names, names not contiguous, or not well formed); the
// caller then decodes it the ordinary way, which resets req and reports
// any error.
func (n *nameLists) unmarshalRequest(b []byte, req proto.Message) bool {
	start, end, count := -1, -1, 0
	for off := 0; off < len(b); {
		num, typ, tl := protowire.ConsumeTag(b[off:])
		if tl < 0 {
			return false
		}
		vl := protowire.ConsumeFieldValue(num, typ, b[off+tl:])
		if vl < 0 {
			return false
		}
		if num == resourceNamesField {
			if typ != protowire.BytesType || (end >= 0 && end != off) {
				return false // interleaved with other fields: not worth it
			}
			if start < 0 {
				start = off
			}
			end = off + tl + vl
			count++
		}
		off += tl + vl
	}
	if count < minSharedNames {
		return false
	}
	raw := b[start:end]
	names, ok := n.lookup(raw, count)
	if !ok {
		return false
	}
	rest := make([]byte, 0, len(b)-len(raw))
	rest = append(append(rest, b[:start]...), b[end:]...)
	if err := proto.Unmarshal(rest, req); err != nil {
		return false
	}
	switch r := req.(type) {
	case *discovery.DiscoveryRequest:
		r.ResourceNames = names
	case *discovery.DeltaDiscoveryRequest:
		r.ResourceNamesSubscribe = names
	default:
		return false
	}
	return true
}

// lookup returns the names encoded in raw (count resource_names fields),
// shared with earlier callers that had the same bytes.
func (n *nameLists) lookup(raw []byte, count int) ([]string, bool) {
	h := maphash.Bytes(n.seed, raw)
	n.mu.Lock()
	if l := n.lists[h]; l != nil && bytes.Equal(l.raw, raw) {
		n.mu.Unlock()
		return l.names, true
	}
	n.mu.Unlock()

	names := make([]string, 0, count)
	for off := 0; off < len(raw); {
		_, _, tl := protowire.ConsumeTag(raw[off:])
		v, vl := protowire.ConsumeBytes(raw[off+tl:])
		if vl < 0 || !utf8.Valid(v) {
			return nil, false
		}
		names = append(names, string(v))
		off += tl + vl
	}
	l := &nameList{raw: bytes.Clone(raw), names: names}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.lists[h]; !ok {
		if len(n.order) >= maxSharedLists {
			delete(n.lists, n.order[0])
			n.order = n.order[1:]
		}
		n.order = append(n.order, h)
	}
	n.lists[h] = l
	return names, true
}
