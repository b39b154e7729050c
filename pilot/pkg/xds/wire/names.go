package wire

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
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

// DefaultSharedNamesBytes is the default bound on the memory of the
// shared name lists (see SetSharedNamesBytes).
const DefaultSharedNamesBytes = 32 << 20

// nameLists shares the resource names of requests. A gateway's EDS
// request names every cluster (5,000 names, 300 KB, at 5,000 services),
// and every gateway of a group sends the same list: with its SotW
// subscription and every ACK, or in its delta subscription. Decoding each
// into thousands of new strings was a sixth of the server's CPU (a fifth
// of a delta server's cold start). Requests whose names are byte-for-byte
// those of an earlier request get the same slice, which is never modified
// (go-control-plane and the cache only read it).
//
// Clients choose these lists, so what is kept is bounded in bytes as well
// as in number: a client sending long made-up lists can make the server
// keep at most the byte bound, and a list longer than a quarter of it is
// decoded for its request alone and freed with it (when the stream that
// sent it no longer holds it).
type nameLists struct {
	mu    sync.Mutex
	seed  maphash.Seed
	limit int64 // bytes; <= 0 keeps nothing
	bytes int64
	lists map[uint64]*nameList
	order []uint64 // insertion order, for eviction
	// byData finds a kept list from its names slice (see NameSet).
	byData map[*string]*nameList
	// last is the list most recently matched or kept. Only kept lists
	// are stored here, and a forgotten list is cleared from it.
	last atomic.Pointer[nameList]
}

// nameList is one shared list. The names are substrings of all, the
// resource_names fields as received: one allocation for the whole list,
// and its size is known.
type nameList struct {
	all   string
	names []string
	size  int64

	// set is the names as a set (without "*"), built on first use and
	// shared, like names, by every stream subscribed to this list.
	setOnce  sync.Once
	set      map[string]struct{}
	wildcard bool // the list names "*"
}

// listSize is what a list of count names encoded in n bytes holds, its
// set included (counted whether built or not).
func listSize(n, count int) int64 { return int64(n) + (16+48)*int64(count) + 64 }

var shared = &nameLists{seed: maphash.MakeSeed(), limit: DefaultSharedNamesBytes, lists: map[uint64]*nameList{}, byData: map[*string]*nameList{}}

// NameSet returns the names of a list the codec shares (a request's
// resource_names or resource_names_subscribe as decoded) as a set, without
// "*", and whether the list names "*". The set is built once per list and
// shared by every caller: it must not be changed. ok is false for a list
// that is not shared (short, too long to keep, or forgotten): the caller
// builds its own set.
func NameSet(names []string) (set map[string]struct{}, wildcard, ok bool) {
	if len(names) == 0 {
		return nil, false, false
	}
	shared.mu.Lock()
	l := shared.byData[unsafe.SliceData(names)]
	shared.mu.Unlock()
	if l == nil || len(l.names) != len(names) {
		return nil, false, false
	}
	l.setOnce.Do(func() {
		l.set = make(map[string]struct{}, len(l.names))
		for _, n := range l.names {
			if n == "*" {
				l.wildcard = true
				continue
			}
			l.set[n] = struct{}{}
		}
	})
	return l.set, l.wildcard, true
}

// SetSharedNamesBytes bounds the memory of the request name lists shared
// between streams (process-wide, as the codec is); lists beyond it are
// forgotten oldest first. Zero or less shares nothing.
func SetSharedNamesBytes(n int64) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.limit = n
	shared.evictLocked(0)
}

// SharedNamesBytes is the memory the shared name lists hold now.
func SharedNamesBytes() int64 {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	return shared.bytes
}

// unmarshalRequest decodes b into req, sharing a long resource_names list
// with earlier requests. It reports false when the request is not one it
// handles (few names, names not contiguous, or not well formed); the
// caller then decodes it the ordinary way, which resets req and reports
// any error.
func (n *nameLists) unmarshalRequest(b []byte, req proto.Message) bool {
	start, end, count := -1, -1, 0
	for off := 0; off < len(b); {
		if b[off] == namesTag && (end < 0 || end == off) {
			// A run of names, read here rather than field by field
			// through protowire.
			next, c, ok := skipNames(b, off)
			if !ok {
				return false
			}
			if start < 0 {
				start = off
			}
			end, count, off = next, count+c, next
			continue
		}
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

// unmarshalLast decodes a request whose run of names is exactly the list
// matched last. The gateways of a group send the same list one ACK after
// another, so the run is compared with that list at once, without reading
// each name or hashing, and buffer by buffer, without joining a request
// that arrived in several: a SotW ACK of a gateway's 1,000 EDS names is
// 60 KB in four HTTP/2 frames, and 500 gateways ACK each push at once. It
// reports false for anything else; the caller then decodes the request
// the other way (from an empty message again).
func (n *nameLists) unmarshalLast(data mem.BufferSlice, req proto.Message) bool {
	last := n.last.Load()
	if last == nil || len(data) == 0 || data.Len() < len(last.all) {
		return false
	}
	// The fields before the names must lie in the first buffer.
	first := data[0].ReadOnlyData()
	start, ok := otherFields(first)
	if !ok || start == len(first) {
		return false
	}
	// Compare the list with what follows, buffer by buffer.
	want, i, off := last.all, 0, start
	for len(want) > 0 {
		if i == len(data) {
			return false
		}
		b := data[i].ReadOnlyData()[off:]
		k := min(len(b), len(want))
		if string(b[:k]) != want[:k] {
			return false
		}
		want, off = want[k:], off+k
		if off == data[i].Len() {
			i, off = i+1, 0
		}
	}
	// The rest is the fields around the names; it must name nothing more.
	rest := make([]byte, 0, data.Len()-len(last.all))
	rest = append(rest, first[:start]...)
	for ; i < len(data); i, off = i+1, 0 {
		rest = append(rest, data[i].ReadOnlyData()[off:]...)
	}
	if end, ok := otherFields(rest); !ok || end != len(rest) {
		return false
	}
	switch r := req.(type) {
	case *discovery.DiscoveryRequest:
		if proto.Unmarshal(rest, r) != nil {
			return false
		}
		r.ResourceNames = last.names
	case *discovery.DeltaDiscoveryRequest:
		if proto.Unmarshal(rest, r) != nil {
			return false
		}
		r.ResourceNamesSubscribe = last.names
	default:
		return false
	}
	return true
}

// otherFields reads the fields at the start of b up to the first one-byte
// resource_names tag, or to the end, and returns where it stopped; ok is
// false for a field that is not well formed or is resource_names under
// another tag encoding.
func otherFields(b []byte) (end int, ok bool) {
	for end < len(b) && b[end] != namesTag {
		num, typ, tl := protowire.ConsumeTag(b[end:])
		if tl < 0 || num == resourceNamesField {
			return 0, false
		}
		vl := protowire.ConsumeFieldValue(num, typ, b[end+tl:])
		if vl < 0 {
			return 0, false
		}
		end += tl + vl
	}
	return end, true
}

// namesTag is the one-byte tag of a resource_names (or
// resource_names_subscribe) field: number 3, length-delimited.
const namesTag = resourceNamesField<<3 | byte(protowire.BytesType)

// skipNames reads the run of resource_names fields at b[off:]; it returns
// the offset after the run and how many names it holds, or false when a
// length runs past the end (the caller then decodes the ordinary way).
func skipNames(b []byte, off int) (next, count int, ok bool) {
	for off < len(b) && b[off] == namesTag {
		off++
		var l uint64
		if off < len(b) && b[off] < 0x80 {
			l = uint64(b[off])
			off++
		} else {
			v, vl := protowire.ConsumeVarint(b[off:])
			if vl < 0 {
				return 0, 0, false
			}
			l, off = v, off+vl
		}
		if l > uint64(len(b)-off) {
			return 0, 0, false
		}
		off += int(l)
		count++
	}
	return off, count, true
}

// lookup returns the names encoded in raw (count resource_names fields),
// shared with earlier callers that had the same bytes when the list is
// small enough to keep.
func (n *nameLists) lookup(raw []byte, count int) ([]string, bool) {
	h := maphash.Bytes(n.seed, raw)
	n.mu.Lock()
	if l := n.lists[h]; l != nil && l.all == string(raw) {
		n.mu.Unlock()
		n.last.Store(l)
		return l.names, true
	}
	n.mu.Unlock()

	all := string(raw)
	names := make([]string, 0, count)
	for off := 0; off < len(all); {
		_, _, tl := protowire.ConsumeTag(raw[off:])
		v, vl := protowire.ConsumeBytes(raw[off+tl:])
		if vl < 0 {
			return nil, false
		}
		start := off + tl + (vl - len(v))
		name := all[start : start+len(v)]
		if !utf8.ValidString(name) {
			return nil, false
		}
		names = append(names, name)
		off += tl + vl
	}
	l := &nameList{all: all, names: names, size: listSize(len(raw), count)}
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.size > n.limit/4 {
		return names, true // too long to keep: this request's alone
	}
	if old, ok := n.lists[h]; ok {
		n.bytes -= old.size
		n.order = slices.DeleteFunc(n.order, func(k uint64) bool { return k == h })
		n.forgetLocked(old)
	}
	n.evictLocked(l.size)
	n.lists[h] = l
	if n.byData == nil {
		n.byData = map[*string]*nameList{}
	}
	n.byData[unsafe.SliceData(l.names)] = l
	n.order = append(n.order, h)
	n.bytes += l.size
	n.last.Store(l)
	return names, true
}

// evictLocked forgets the oldest lists until one of size more fits.
func (n *nameLists) evictLocked(more int64) {
	for len(n.order) > 0 && (len(n.order) >= maxSharedLists || n.bytes+more > n.limit) {
		k := n.order[0]
		n.order = n.order[1:]
		if l := n.lists[k]; l != nil {
			n.bytes -= l.size
			delete(n.lists, k)
			n.forgetLocked(l)
		}
	}
	if len(n.order) == 0 {
		n.order = nil // let the backing array go
	}
}

// forgetLocked drops l from the slice index. Streams holding its names or
// set keep them; a later request with the same bytes gets a new list.
func (n *nameLists) forgetLocked(l *nameList) {
	if len(l.names) > 0 && n.byData[unsafe.SliceData(l.names)] == l {
		delete(n.byData, unsafe.SliceData(l.names))
	}
	n.last.CompareAndSwap(l, nil)
}
