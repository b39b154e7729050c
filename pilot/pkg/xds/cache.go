package xds

import (
	"cmp"
	"maps"
	"reflect"
	"slices"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

// openWatch binds w to its stream, and evaluates it. The stream's loop
// calls it after the callbacks saw the request.
func (s *DiscoveryServer) openWatch(key streamKey, w *watch) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[key]
	if st == nil || st.proxy == nil {
		return nil, status.Error(codes.Internal, "request does not belong to a known stream")
	}
	typeURL := ""
	if w.sotwReq != nil {
		typeURL = w.sotwReq.GetTypeUrl()
	} else {
		typeURL = w.deltaReq.GetTypeUrl()
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

// typeMask is a set of served types, bit i for servedTypes[i].
type typeMask uint32

// allTypes also takes in the types not served (answered as empty).
const allTypes = ^typeMask(0)

// notifyLocked evaluates the open watches of p's streams against p's view,
// in ADS order: those of the types in changed, or all of them. A watch of
// a type whose set did not change has nothing new to be answered with.
// The caller holds mu.
func (s *DiscoveryServer) notifyLocked(p *proxyState, changed typeMask) {
	if len(p.streams) == 1 { // nearly always: one ADS stream per proxy
		for _, st := range p.streams {
			s.notifyStreamLocked(st, p.view, changed)
		}
		return
	}
	for _, k := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
		s.notifyStreamLocked(p.streams[k], p.view, changed)
	}
}

func (s *DiscoveryServer) notifyStreamLocked(st *streamState, v *snapshot.View, changed typeMask) {
	if changed == allTypes {
		for _, t := range slices.SortedFunc(maps.Keys(st.types), compareTypeURL) {
			if w := st.types[t].watch; w != nil {
				s.evaluateLocked(w, v)
			}
		}
		return
	}
	for i, t := range snapshot.Types {
		if changed&(1<<i) == 0 {
			continue
		}
		if ts := st.types[t]; ts != nil && ts.watch != nil {
			s.evaluateLocked(ts.watch, v)
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
// caller holds mu. Sending cannot block: a response goes to the stream's
// outbox.
func (s *DiscoveryServer) evaluateLocked(w *watch, v *snapshot.View) {
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
func (s *DiscoveryServer) respondSotwLocked(w *watch, v *snapshot.View) {
	ts, req := w.ts, w.sotwReq
	cur := v.Set(ts.typeURL)
	wildcard := w.sub.IsWildcard()
	names := w.sub.SubscribedResources()
	if !sotwShouldRespond(ts, req, cur, wildcard, names) {
		s.convergedLocked(w.st.proxy, ts.typeURL, cur)
		return
	}
	resp := &discovery.DiscoveryResponse{VersionInfo: cur.Version, TypeUrl: ts.typeURL}
	var sentNames map[string]struct{}
	var sentList []string
	if wildcard {
		resp.Resources = cur.Anys // shared by every wildcard response of this view
	} else {
		// The subscription's name set is replaced, never changed, by later
		// requests, so it can be kept as the record of what was answered.
		sentNames, sentList = names, req.GetResourceNames()
		if part := sotwPartial(ts, req, cur, names); len(part) > 0 {
			resp.Resources = part
		} else {
			resp.Resources = cur.NamedAnysFor(sentList, names)
		}
	}
	// Ordered ADS drops a queued response of a type when a newer request
	// of that type arrives, so at most this one is still in flight.
	// Every stream sent this content writes the same serialized body.
	b := cur.SotwBody(ts.typeURL, resp.Resources, s.countEncoding)
	ts.inflight = []*inflight{{sotw: resp, set: cur, names: sentNames, list: sentList}}
	ts.watch = nil
	w.sotwOut.put(&sotwOut{req: req, resp: resp, body: b})
}

// sotwPartial returns, for a named request of a type whose SotW responses
// need not carry every resource (EDS, RDS and SDS: Envoy and gRPC keep the
// resources a response leaves out, unlike LDS and CDS), the resources that
// changed when the stream holds, for the same names, the set cur was built
// from (a partial endpoint push): the changed names it asked for that
// exist, by name. istiod's incremental EDS sends the same. Otherwise, or
// when nothing of the changed set is asked for and exists, nil: the
// caller sends every name. A client that rejected its last response, or
// names another version than it was sent, gets every name.
func sotwPartial(ts *typeStatus, req *discovery.DiscoveryRequest, cur *snapshot.TypeSet, names map[string]struct{}) []*anypb.Any {
	if !partialSotwType(ts.typeURL) || (ts.nackedNonce != "" && req.GetResponseNonce() == ts.nackedNonce) ||
		req.GetVersionInfo() != ts.sentVersion ||
		!(sameMap(names, ts.sentNames) || snapshot.SameNameList(req.GetResourceNames(), ts.sentList)) {
		return nil
	}
	changed, ok := cur.ChangedSince(ts.sent)
	if !ok {
		return nil
	}
	var out []*anypb.Any
	for _, n := range changed {
		if _, ok := names[n]; !ok {
			continue
		}
		if r := cur.ByName[n]; r != nil {
			out = append(out, r.Any)
		}
	}
	return out
}

// partialSotwType reports whether a SotW response of typeURL may carry a
// subset of the names asked for: not for listeners and clusters, whose
// responses are the whole state for Envoy and for gRPC alike.
func partialSotwType(typeURL string) bool {
	switch typeURL {
	case resource.EndpointType, resource.RouteType, resource.SecretType:
		return true
	}
	return false
}

// sotwShouldRespond decides whether a SotW request is answered now. When
// not, it may replace ts.sentNames by an equal set (see below).
func sotwShouldRespond(ts *typeStatus, req *discovery.DiscoveryRequest, cur *snapshot.TypeSet, wildcard bool, names map[string]struct{}) bool {
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
		return cur.Version != ts.sent.Version
	}
	// The common case on a push, checked without walking the names (a
	// gateway's EDS names every cluster: walking them for every proxy
	// was half of a push): the same name set as answered, and a set with
	// the same version, which hashes every (name, content hash) pair.
	sameContent := cur == ts.sent || cur.Version == ts.sent.Version
	sameNames := sameMap(names, ts.sentNames) || snapshot.SameNameList(req.GetResourceNames(), ts.sentList)
	if sameContent && sameNames {
		return false
	}
	if changed, ok := cur.ChangedSince(ts.sent); !sameContent && ok && sameNames {
		// cur is what the stream holds with a few resources replaced:
		// only those names can differ.
		for _, n := range changed {
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
		if !sameContent && cur.HashOf(n) != ts.sent.HashOf(n) {
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
func (s *DiscoveryServer) respondDeltaLocked(w *watch, v *snapshot.View) {
	ts := w.ts
	cur := v.Set(ts.typeURL)
	known := w.sub.ReturnedResources()
	if deltaUnchanged(ts, known, cur) {
		s.convergedLocked(w.st.proxy, ts.typeURL, cur)
		return
	}
	var updates []*discovery.Resource
	// covered counts the set's resources the subscription covers: when it
	// covers them all, the client will hold exactly the set.
	covered := 0
	fast, exact := false, false
	b := ts.deltaBuilt
	var changed []string
	if b != nil && len(known) == b.n && sameMap(known, b.next) {
		changed, fast = cur.ChangedSince(b.set)
	}
	if fast {
		// cur is the set the client's versions came from with a few
		// resources replaced (same names): only those can differ, and
		// nothing is removed.
		var subscribed map[string]struct{}
		if !w.sub.IsWildcard() {
			subscribed = w.sub.SubscribedResources()
		}
		// The client will hold exactly cur when it held exactly the base
		// and is sent every changed resource.
		exact = b.shared
		for _, n := range changed {
			if _, ok := subscribed[n]; subscribed != nil && !ok {
				exact = false
				continue
			}
			if r := cur.ByName[n]; r != nil && known[n] != r.Hash {
				updates = append(updates, r.Delta)
			}
		}
		if len(updates) == 0 {
			// What the client holds is cur's content for every name.
			ts.deltaBuilt = &deltaBuilt{next: b.next, n: b.n, set: cur, shared: b.shared}
			s.convergedLocked(w.st.proxy, ts.typeURL, cur)
			return
		}
	}
	switch {
	case fast:
		// updates are set; covered stays 0, so next is built from known.
	case len(known) == 0 && (w.sub.IsWildcard() || coversAll(w.sub.SubscribedResources(), cur)):
		// A first response carrying the whole set (wildcard, or naming
		// every resource, as a gateway's EDS does): the set's own list,
		// shared by every such response.
		updates, covered = cur.AllDeltas(), len(cur.Items)
	case w.sub.IsWildcard():
		covered = len(cur.Items)
		for _, r := range cur.Items {
			if h, ok := known[r.Name]; !ok || h != r.Hash {
				updates = append(updates, r.Delta)
			}
		}
	default:
		updates, covered = namedUpdates(cur, w.sub.SubscribedResources(), known)
	}
	var removed []string
	if !fast {
		for n := range known {
			if cur.ByName[n] == nil {
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
	// next is what the client holds once this is sent. When that is
	// exactly cur, it is cur's own version map, shared by every stream
	// holding cur (never changed; the stream copies it before changing
	// it). Otherwise it is the stream's own map: the last one this stream
	// was sent, changed in place (it is touched by the stream's loop only
	// after this watch is cancelled under mu), or a copy.
	var next map[string]string
	shared := false
	switch b := ts.deltaBuilt; {
	case exact || (!fast && covered == len(cur.Items)):
		// Every resource of the set is covered and what the client holds
		// beyond it is removed: it will hold the set, exactly.
		next, shared = cur.VersionMap(), true
	case b != nil && sameMap(known, b.next) && !b.shared:
		next = known
	default:
		next = make(map[string]string, len(known)+len(updates))
		maps.Copy(next, known)
	}
	if !shared {
		for _, r := range updates {
			next[r.GetName()] = r.GetVersion()
		}
		for _, n := range removed {
			delete(next, n)
		}
	}
	// The response carries the body's list of resources, which every
	// stream sent the same resources shares: until it is acknowledged a
	// response is kept, and 500 gateways' own lists of 5,000 were 40 MB.
	body := cur.DeltaBody(ts.typeURL, updates, removed, s.countEncoding)
	resp := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: cur.Version, TypeUrl: ts.typeURL,
		Resources: body.Deltas, RemovedResources: body.Removed}
	ts.inflight = append(ts.inflight, &inflight{delta: resp, set: cur})
	ts.deltaBuilt = &deltaBuilt{next: next, n: len(next), set: cur, shared: shared}
	ts.watch = nil
	w.deltaOut.put(&deltaOut{req: w.deltaReq, resp: resp, body: body, next: next, shared: shared})
}

// deltaUnchanged reports, without walking any names, that a delta watch
// has nothing to send: the client's version map is still the one the last
// response produced and the view's set is the one that response was cut
// from. At 5,000 clusters, comparing every name on every ACK and on every
// push that left the type unchanged was the largest part of a delta
// server's own CPU. The stream's loop changes a version map only when a
// request subscribes or unsubscribes (openWatch then drops the record),
// and then only by deleting entries or, for a wildcard subscription,
// marking one for resending (copying it first if shared); the length check
// is a second guard.
func deltaUnchanged(ts *typeStatus, known map[string]string, cur *snapshot.TypeSet) bool {
	b := ts.deltaBuilt
	if b == nil || len(known) != b.n || !sameMap(known, b.next) {
		return false
	}
	return cur == b.set || cur.Version == b.set.Version
}

// convergedLocked notes that a proxy holds everything it asked for of a
// type at cur's version although nothing was sent (a named subscription
// whose resources did not change): the change pending for the convergence
// metric will not be ACKed and is dropped.
func (s *DiscoveryServer) convergedLocked(p *proxyState, typeURL string, cur *snapshot.TypeSet) {
	if pc, ok := p.pending[typeURL]; ok && pc.version == cur.Version {
		delete(p.pending, typeURL)
	}
}

// commitLocked records a response the stream's loop is writing:
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

// namedUpdates returns the resources of cur named in subscribed whose
// version differs from known, and how many of cur's resources subscribed
// names. It walks the sorted set when the names cover much of it (sorting
// a gateway's EDS names for every proxy was half of a push), else sorts
// the names.
func namedUpdates(cur *snapshot.TypeSet, subscribed map[string]struct{}, known map[string]string) (updates []*discovery.Resource, covered int) {
	if len(known) == 0 {
		// A first response: every subscribed resource that exists.
		updates = make([]*discovery.Resource, 0, min(len(subscribed), len(cur.Items)))
	}
	add := func(r *snapshot.Resource) {
		covered++
		if h, ok := known[r.Name]; !ok || h != r.Hash {
			updates = append(updates, r.Delta)
		}
	}
	if len(cur.Items) <= 4*len(subscribed) {
		for _, r := range cur.Items {
			if _, ok := subscribed[r.Name]; ok {
				add(r)
			}
		}
	} else {
		for _, n := range slices.Sorted(maps.Keys(subscribed)) {
			if r := cur.ByName[n]; r != nil {
				add(r)
			}
		}
	}
	return updates, covered
}

// coversAll reports whether names includes every resource of set.
func coversAll(names map[string]struct{}, set *snapshot.TypeSet) bool {
	if len(names) < len(set.Items) {
		return false
	}
	for _, r := range set.Items {
		if _, ok := names[r.Name]; !ok {
			return false
		}
	}
	return true
}
