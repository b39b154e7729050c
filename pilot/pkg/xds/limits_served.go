package xds

import (
	"sync"
	"time"
)

// The limits on names grow with what the server serves. A gateway's EDS
// request names every cluster and a proxyless client's requests every
// listener or route it uses: a fixed bound meant for hostile clients
// would, past some size of config, close a legitimate gateway's stream
// every time it asked (and again after each reconnect). So each count
// and byte bound on names is its flag plus servedFactor times the largest
// set of the type any proxy was sent lately, and a name may be as long as
// the longest served one. What a client names beyond that is what the
// flags allow; what the server serves it holds itself already.

// servedFactor leaves room for a delta client holding the names of a set
// being replaced and of its replacement at once (Envoy subscribes to new
// clusters' endpoints before it unsubscribes from old ones), and for a
// reconnecting client naming its initial resource versions beside its
// subscriptions.
const servedFactor = 2

// servedHold is how long a set counts after it was last served: a client
// answering a response of a push since replaced by a smaller one is not
// cut off. The figure covers at least this long and at least the push
// before the current one.
const servedHold = time.Minute

// nameOverheadBytes is what holding one name costs besides its bytes: its
// string header in the request's list and its slot in a subscription's
// map (package wire counts the same for its shared lists).
const nameOverheadBytes = 64

// nameStat is the size of a set of names: how many, their bytes as
// counted by the byte limits, and the longest.
type nameStat struct {
	count   int
	bytes   int64
	longest int
}

func (a nameStat) max(b nameStat) nameStat {
	return nameStat{count: max(a.count, b.count), bytes: max(a.bytes, b.bytes), longest: max(a.longest, b.longest)}
}

// nameStatOnce is a typeSet's nameStat, computed on first use.
type nameStatOnce struct {
	once sync.Once
	stat nameStat
}

// names returns the sizes of the set's names. A set built from another
// with some resources replaced (a partial endpoint push) has its names.
func (ts *typeSet) nameStat() nameStat {
	ts.nameSizes.once.Do(func() {
		if ts.base != nil {
			ts.nameSizes.stat = ts.base.nameStat()
			return
		}
		st := nameStat{count: len(ts.items)}
		for _, r := range ts.items {
			st.bytes += int64(len(r.name)) + nameOverheadBytes
			st.longest = max(st.longest, len(r.name))
		}
		ts.nameSizes.stat = st
	})
	return ts.nameSizes.stat
}

// servedStats is, per served type, the largest set of it recently sent
// to any proxy (see servedHold). Guarded by DiscoveryServer.mu.
type servedStats struct {
	since     time.Time // when cur began; zero before the first push
	cur, prev [numTypes]nameStat
}

// pushed notes a push's sets: its clusters and endpoints and every
// group's view. Groups translated later (a proxy of a new configuration
// connecting) are noted by noteView. The caller holds mu.
func (s *servedStats) pushed(now time.Time, st *pushState) {
	if s.since.IsZero() || now.Sub(s.since) >= servedHold {
		s.prev, s.cur, s.since = s.cur, [numTypes]nameStat{}, now
	}
	s.noteServices(st.clusters, st.endpoints)
	// A namespace view (its own DestinationRules, or services exported to
	// it alone) can serve more clusters than the shared sets.
	for _, sv := range st.views {
		s.noteServices(sv.clusters, sv.endpoints)
	}
	for _, g := range st.groups {
		s.noteView(g.view)
	}
}

// noteServices notes a set of clusters and its endpoints. The caller
// holds mu.
func (s *servedStats) noteServices(clusters, endpoints *typeSet) {
	for i, set := range []*typeSet{clusters, endpoints} {
		if set != nil {
			s.cur[cdsIdx+i] = s.cur[cdsIdx+i].max(set.nameStat())
		}
	}
}

// noteView notes the sets of a view some proxy is sent. The caller holds mu.
func (s *servedStats) noteView(v *view) {
	if v == nil {
		return
	}
	for i, set := range v.sets {
		s.cur[i] = s.cur[i].max(set.nameStat())
	}
}

// of returns the served figure of a type URL: zero for types the server
// does not serve. The caller holds mu.
func (s *servedStats) of(typeURL string) nameStat {
	i, ok := typeIndex(typeURL)
	if !ok {
		return nameStat{}
	}
	return s.cur[i].max(s.prev[i])
}

// grown is a limit grown by what is served: limit + servedFactor*served;
// a negative limit stays off.
func grown(limit int64, served int64) int64 {
	if limit < 0 {
		return limit
	}
	return limit + servedFactor*served
}

// nameLimits are the limits on names of one type as they stand now.
type nameLimits struct {
	requestNames, subscribedNames int64
	bytes                         int64
	nameBytes                     int
}

// nameLimitsLocked returns the limits on names of typeURL. The caller
// holds mu.
func (s *DiscoveryServer) nameLimitsLocked(typeURL string) nameLimits {
	served := s.served.of(typeURL)
	l := nameLimits{
		requestNames:    grown(int64(s.limits.MaxResourceNamesPerRequest), int64(served.count)),
		subscribedNames: grown(int64(s.limits.MaxSubscribedNames), int64(served.count)),
		bytes:           grown(int64(s.limits.MaxSubscribedBytes), served.bytes),
		nameBytes:       s.limits.MaxResourceNameBytes,
	}
	if l.nameBytes >= 0 {
		l.nameBytes = max(l.nameBytes, served.longest)
	}
	return l
}
