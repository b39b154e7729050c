package xds

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// adsCache is the cache go-control-plane's SotW and delta servers serve
// from. It answers from the view of the stream's proxy and the stream's own
// state (what it was sent, what it NACKed), never from the request's
// version alone; see the package comment for the rules.
type adsCache struct{ s *DiscoveryServer }

var _ cache.Cache = adsCache{}

// Fetch is REST xDS, which is not served.
func (adsCache) Fetch(context.Context, *cache.Request) (cache.Response, error) {
	return nil, errors.New("REST xDS is not served; use ADS")
}

// CreateWatch opens a state-of-the-world watch and answers it at once if
// the stream's view already differs from what the stream holds.
func (c adsCache) CreateWatch(req *cache.Request, sub cache.Subscription, ch chan cache.Response) (func(), error) {
	return c.s.openWatch(req, &watch{sotwReq: req, sub: sub, sotwCh: ch})
}

// CreateDeltaWatch opens an incremental watch, answered like CreateWatch.
func (c adsCache) CreateDeltaWatch(req *cache.DeltaRequest, sub cache.Subscription, ch chan cache.DeltaResponse) (func(), error) {
	return c.s.openWatch(req, &watch{deltaReq: req, sub: sub, deltaCh: ch})
}

// openWatch binds w to the stream the callbacks saw req on, and evaluates it.
func (s *DiscoveryServer) openWatch(req any, w *watch) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.requests[req]
	delete(s.requests, req)
	if st == nil || st.proxy == nil {
		return nil, status.Error(codes.Internal, "request does not belong to a known stream")
	}
	st.request = nil
	typeURL := ""
	if w.sotwReq != nil {
		typeURL = w.sotwReq.GetTypeUrl()
	} else {
		typeURL = w.deltaReq.GetTypeUrl()
	}
	if n := len(w.sub.SubscribedResources()); exceeds(n, s.limits.MaxSubscribedNames) {
		return nil, s.limitExceeded(st.peer, limitSubscribed, "the stream subscribes to more names of one type than allowed",
			"type", clip(typeURL), "names", n)
	}
	w.st, w.ts = st, st.typeStatus(typeURL)
	w.ts.watch = w
	if r := w.deltaReq; r != nil && len(r.GetResourceNamesSubscribe())+len(r.GetResourceNamesUnsubscribe()) > 0 {
		w.ts.deltaBuilt = nil // the subscription changed: compare in full
	}
	if v := st.proxy.view; v != nil {
		s.evaluateLocked(w, v)
	}
	return func() {
		s.mu.Lock()
		if w.ts.watch == w {
			w.ts.watch = nil
		}
		s.mu.Unlock()
	}, nil
}

// notifyLocked evaluates the open watches of p's streams against p's view,
// in ADS order. The caller holds mu.
func (s *DiscoveryServer) notifyLocked(p *proxyState) {
	for _, k := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
		st := p.streams[k]
		for _, t := range slices.SortedFunc(maps.Keys(st.types), compareTypeURL) {
			if w := st.types[t].watch; w != nil {
				s.evaluateLocked(w, p.view)
			}
		}
	}
}

func compareStreamKey(a, b streamKey) int {
	if a.delta != b.delta {
		if a.delta {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.id, b.id)
}

// evaluateLocked answers w if v differs from what its stream holds. The
// caller holds mu. Sending cannot block: go-control-plane gives each ADS
// stream a channel with room for two responses per type (one for SotW),
// and a stream has at most one watch per type, answered at most once.
func (s *DiscoveryServer) evaluateLocked(w *watch, v *view) {
	if w.sotwReq != nil {
		s.respondSotwLocked(w, v)
	} else {
		s.respondDeltaLocked(w, v)
	}
}

// respondSotwLocked answers a state-of-the-world watch when needed. A
// wildcard request gets every resource of the type; a named request gets
// the names asked for that exist (a missing name is answered by its
// absence). The response's version is the type's version in the view.
func (s *DiscoveryServer) respondSotwLocked(w *watch, v *view) {
	ts, req := w.ts, w.sotwReq
	cur := v.set(ts.typeURL)
	wildcard := w.sub.IsWildcard()
	names := w.sub.SubscribedResources()
	if !sotwShouldRespond(ts, req, cur, wildcard, names) {
		s.convergedLocked(w.st.proxy, ts.typeURL, cur)
		return
	}
	resp := &discovery.DiscoveryResponse{VersionInfo: cur.version, TypeUrl: ts.typeURL}
	var sentNames map[string]struct{}
	var sentList []string
	if wildcard {
		resp.Resources = cur.anys // shared by every wildcard response of this view
	} else {
		// The subscription's name set is replaced, never changed, by later
		// requests, so it can be kept as the record of what was answered.
		sentNames, sentList = names, req.GetResourceNames()
		resp.Resources = cur.namedAnysFor(sentList, names)
	}
	// Ordered ADS drops a queued response of a type when a newer request
	// of that type arrives, so at most this one is still in flight.
	// Every stream sent this content writes the same serialized body.
	s.wire.sotw.put(resp, cur.sotwBody(ts.typeURL, resp.Resources, s.countEncoding))
	ts.inflight = []*inflight{{sotw: resp, set: cur, names: sentNames, list: sentList}}
	ts.watch = nil
	select {
	case w.sotwCh <- &cache.PassthroughResponse{Request: req, DiscoveryResponse: resp}:
	default:
		s.log.Error("ADS response channel full; response dropped", "proxy", clip(w.st.proxy.proxy.ID), "type", clip(shortType(ts.typeURL)))
	}
}

// namedAnys returns the Anys of the named resources that exist, by name:
// walking the sorted set when the names cover much of it, else sorting the
// names.
func namedAnys(cur *typeSet, names map[string]struct{}) []*anypb.Any {
	var out []*anypb.Any
	if len(cur.items) <= 4*len(names) {
		for _, r := range cur.items {
			if _, ok := names[r.name]; ok {
				out = append(out, r.any)
			}
		}
		return out
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if r := cur.byName[n]; r != nil {
			out = append(out, r.any)
		}
	}
	return out
}

// sotwShouldRespond decides whether a SotW request is answered now. When
// not, it may replace ts.sentNames by an equal set (see below).
func sotwShouldRespond(ts *typeStatus, req *discovery.DiscoveryRequest, cur *typeSet, wildcard bool, names map[string]struct{}) bool {
	if ts.sent == nil {
		return true // the stream has not been sent this type: answer, even if empty
	}
	if ts.nackedNonce == "" || req.GetResponseNonce() != ts.nackedNonce {
		// A client naming a version other than the one it was sent (and
		// not because it rejected it) is answered, as go-control-plane's
		// caches do; an ACK names the version sent.
		if req.GetVersionInfo() != ts.sentVersion {
			return true
		}
	}
	if wildcard != (ts.sentNames == nil) {
		return true
	}
	if wildcard {
		return cur.version != ts.sent.version
	}
	// The common case on a push, checked without walking the names (a
	// gateway's EDS names every cluster: walking them for every proxy
	// was half of a push): the same name set as answered, and a set with
	// the same version, which hashes every (name, content hash) pair.
	sameContent := cur == ts.sent || cur.version == ts.sent.version
	sameNames := sameMap(names, ts.sentNames) || sameNameList(req.GetResourceNames(), ts.sentList)
	if sameContent && sameNames {
		return false
	}
	if !sameContent && cur.base != nil && cur.base == ts.sent && sameNames {
		// cur is what the stream holds with a few resources replaced:
		// only those names can differ.
		for n := range cur.changed {
			if _, ok := names[n]; ok {
				return true
			}
		}
		// The stream holds cur's content for every name it asked for.
		ts.sent = cur
		return false
	}
	for n := range names {
		if _, ok := ts.sentNames[n]; !ok {
			return true // newly subscribed: answer, even if it does not exist
		}
		if !sameContent && cur.hashOf(n) != ts.sent.hashOf(n) {
			return true
		}
	}
	if len(names) == len(ts.sentNames) {
		// Every name was answered and there are as many: the same set.
		// Keep the request's map as the record, so the next check (an ACK
		// replaces the map with an equal one) is by identity. The stream
		// holds cur's content for all of them, so cur is the set to
		// compare with next (which lets a partial push check its
		// changed names alone).
		ts.sentNames, ts.sentList = names, req.GetResourceNames()
		ts.sent = cur
	}
	return false
}

// sameMap reports whether a and b are the same map (not equal maps). A
// SotW subscription's name set is replaced, never changed, by later
// requests, so the same map means the same names; for delta version maps
// see deltaUnchanged.
func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// respondDeltaLocked answers a delta watch with the resources that differ
// from the versions the client holds (the subscription's returned
// resources: what was sent on this stream, or the initial_resource_versions
// of a reconnect) and the names it holds that no longer exist. Wildcard
// subscriptions (Envoy's CDS and LDS) cover every resource of the type;
// others cover the names subscribed. The first request of a type on a
// stream is answered even when nothing differs, so the client can finish
// initializing.
func (s *DiscoveryServer) respondDeltaLocked(w *watch, v *view) {
	ts := w.ts
	cur := v.set(ts.typeURL)
	known := w.sub.ReturnedResources()
	if deltaUnchanged(ts, known, cur) {
		s.convergedLocked(w.st.proxy, ts.typeURL, cur)
		return
	}
	var updates []*discovery.Resource
	// covered counts the set's resources the subscription covers: when it
	// covers them all, the client will hold exactly the set.
	covered := 0
	fast := false
	if b := ts.deltaBuilt; b != nil && cur.base != nil && cur.base == b.set && len(known) == b.n && sameMap(known, b.next) {
		// cur is the set the client's versions came from with a few
		// resources replaced (same names): only those can differ, and
		// nothing is removed.
		fast = true
		var subscribed map[string]struct{}
		if !w.sub.IsWildcard() {
			subscribed = w.sub.SubscribedResources()
		}
		for _, n := range slices.Sorted(maps.Keys(cur.changed)) {
			if _, ok := subscribed[n]; subscribed != nil && !ok {
				continue
			}
			if r := cur.byName[n]; r != nil && known[n] != r.hash {
				updates = append(updates, r.delta)
			}
		}
		if len(updates) == 0 {
			ts.deltaBuilt = &deltaBuilt{next: b.next, n: b.n, set: cur}
			s.convergedLocked(w.st.proxy, ts.typeURL, cur)
			return
		}
	}
	if fast {
		// updates are set; covered stays 0, so next is built from known.
	} else if w.sub.IsWildcard() {
		covered = len(cur.items)
		for _, r := range cur.items {
			if h, ok := known[r.name]; !ok || h != r.hash {
				updates = append(updates, r.delta)
			}
		}
	}
	if !fast && !w.sub.IsWildcard() {
		// The subscribed resources that exist, by name: walking the sorted
		// set when the names cover much of it (sorting a gateway's EDS
		// names for every proxy was half of a push), else sorting them.
		subscribed := w.sub.SubscribedResources()
		add := func(r *res) {
			covered++
			if h, ok := known[r.name]; !ok || h != r.hash {
				updates = append(updates, r.delta)
			}
		}
		if len(cur.items) <= 4*len(subscribed) {
			for _, r := range cur.items {
				if _, ok := subscribed[r.name]; ok {
					add(r)
				}
			}
		} else {
			for _, n := range slices.Sorted(maps.Keys(subscribed)) {
				if r := cur.byName[n]; r != nil {
					add(r)
				}
			}
		}
	}
	var removed []string
	if !fast {
		for n := range known {
			if cur.byName[n] == nil {
				removed = append(removed, n)
			}
		}
	}
	slices.Sort(removed)
	first := ts.sends == 0 && len(ts.inflight) == 0
	if len(updates) == 0 && len(removed) == 0 && !first {
		s.convergedLocked(w.st.proxy, ts.typeURL, cur)
		return
	}
	var next map[string]string
	if !fast && covered == len(cur.items) {
		// Every resource of the set is covered and what the client holds
		// beyond it is removed: it will hold the set, exactly.
		next = maps.Clone(cur.versionMap())
	} else {
		next = make(map[string]string, len(known)+len(updates))
		maps.Copy(next, known)
		for _, r := range updates {
			next[r.GetName()] = r.GetVersion()
		}
		for _, n := range removed {
			delete(next, n)
		}
	}
	resp := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: cur.version, TypeUrl: ts.typeURL,
		Resources: updates, RemovedResources: removed}
	s.wire.delta.put(resp, cur.deltaBody(ts.typeURL, updates, removed, s.countEncoding))
	ts.inflight = append(ts.inflight, &inflight{delta: resp, set: cur})
	ts.deltaBuilt = &deltaBuilt{next: next, n: len(next), set: cur}
	ts.watch = nil
	select {
	case w.deltaCh <- &cache.DeltaPassthroughResponse{DeltaRequest: w.deltaReq, NextVersionMap: next, DeltaDiscoveryResponse: resp}:
	default:
		s.log.Error("delta ADS response channel full; response dropped", "proxy", clip(w.st.proxy.proxy.ID), "type", clip(shortType(ts.typeURL)))
	}
}

// deltaUnchanged reports, without walking any names, that a delta watch
// has nothing to send: the client's version map is still the one the last
// response produced and the view's set is the one that response was cut
// from. At 5,000 clusters, comparing every name on every ACK and on every
// push that left the type unchanged was the largest part of a delta
// server's own CPU. go-control-plane changes a version map in place only
// when a request subscribes or unsubscribes (openWatch then drops the
// record), and then only by deleting entries or, for a wildcard
// subscription, marking one for resending; the length check is a second
// guard.
func deltaUnchanged(ts *typeStatus, known map[string]string, cur *typeSet) bool {
	b := ts.deltaBuilt
	if b == nil || len(known) != b.n || !sameMap(known, b.next) {
		return false
	}
	return cur == b.set || cur.version == b.set.version
}

// convergedLocked notes that a proxy holds everything it asked for of a
// type at cur's version although nothing was sent (a named subscription
// whose resources did not change): the change pending for the convergence
// metric will not be ACKed and is dropped.
func (s *DiscoveryServer) convergedLocked(p *proxyState, typeURL string, cur *typeSet) {
	if pc, ok := p.pending[typeURL]; ok && pc.version == cur.version {
		delete(p.pending, typeURL)
	}
}

// commitLocked records a response go-control-plane is writing to a stream:
// from now on the stream holds it.
func (s *DiscoveryServer) commitLocked(ts *typeStatus, match func(*inflight) bool, version, nonce string) {
	for i, f := range ts.inflight {
		if !match(f) {
			continue
		}
		ts.sent, ts.sentNames, ts.sentList = f.set, f.names, f.list
		ts.inflight = slices.Delete(ts.inflight, 0, i+1)
		break
	}
	ts.sentVersion = version
	ts.sentNonce = nonce
	ts.sentAt = s.clock.Now()
	ts.sends++
}
