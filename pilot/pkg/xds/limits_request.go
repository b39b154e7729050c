package xds

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// maxNodeBytes bounds the node a request carries. A stream keeps its node
// id and labels for as long as it is open; Istio's node metadata (labels,
// annotations, proxy config) is a few KiB, and Kubernetes bounds a pod's
// annotations to 256 KiB. A node over it ends the stream before it is
// parsed (an invalid node within it is refused as invalid).
const maxNodeBytes = 2 << 20

// listShape is the size of one name list of a request, as the limits
// count it.
type listShape struct {
	names   int
	bytes   int64 // each name's length plus nameOverheadBytes
	longest int
}

func shapeOf(list []string) listShape {
	sh := listShape{names: len(list)}
	for _, n := range list {
		sh.bytes += int64(len(n)) + nameOverheadBytes
		sh.longest = max(sh.longest, len(n))
	}
	return sh
}

// requestShape is what a request asks the server to hold, measured before
// anything else looks at it.
type requestShape struct {
	// names counts the names of all its lists (as
	// Limits.MaxResourceNamesPerRequest does).
	names int
	// listBytes is its largest name list's size.
	listBytes int64
	// longestName is its longest resource name, longestTag its longest
	// version or nonce.
	longestName, longestTag int
	// nodeBytes is the size of the node it carries (0: none).
	nodeBytes int
}

// sotwShape measures a SotW request. A request naming the very list the
// stream's subscription came from (an ACK: the codec shares the list, see
// wire.NameSet) reuses its shape rather than walking the names again.
func sotwShape(req *discovery.DiscoveryRequest, sub *subscription) requestShape {
	list := req.GetResourceNames()
	var ls listShape
	if sub != nil && sameNameList(list, sub.list) {
		ls = sub.listShape
	} else {
		ls = shapeOf(list)
	}
	sh := requestShape{names: ls.names, listBytes: ls.bytes, longestName: ls.longest,
		longestTag: max(len(req.GetVersionInfo()), len(req.GetResponseNonce()))}
	if n := req.GetNode(); n != nil {
		sh.nodeBytes = proto.Size(n)
	}
	return sh
}

// deltaShape measures a delta request: its subscribe, unsubscribe and
// initial version lists (an initial version counts its name and its own
// bytes).
func deltaShape(req *discovery.DeltaDiscoveryRequest) requestShape {
	sub, unsub := shapeOf(req.GetResourceNamesSubscribe()), shapeOf(req.GetResourceNamesUnsubscribe())
	initial := listShape{names: len(req.GetInitialResourceVersions())}
	longestVersion := 0
	for n, v := range req.GetInitialResourceVersions() {
		initial.bytes += int64(len(n)+len(v)) + nameOverheadBytes
		initial.longest = max(initial.longest, len(n))
		longestVersion = max(longestVersion, len(v))
	}
	sh := requestShape{
		names:       sub.names + unsub.names + initial.names,
		listBytes:   max(sub.bytes, unsub.bytes, initial.bytes),
		longestName: max(sub.longest, unsub.longest, initial.longest),
		longestTag:  max(longestVersion, len(req.GetResponseNonce())),
	}
	if n := req.GetNode(); n != nil {
		sh.nodeBytes = proto.Size(n)
	}
	return sh
}

// exceeds64 is exceeds for int64 bounds.
func exceeds64(n, limit int64) bool { return limit >= 0 && n > limit }

// limitRequest checks a request against the stream's limits before
// anything else looks at it: the request rate, the type URL, the number
// of types the stream asks for, and the names it carries (how many, how
// long, how many bytes a list) and its node. A request over a limit ends
// the stream with ResourceExhausted.
func (s *DiscoveryServer) limitRequest(key streamKey, typeURL string, sh requestShape) error {
	s.mu.Lock()
	st := s.streams[key]
	if st == nil {
		s.mu.Unlock()
		return nil // onRequest reports it
	}
	if !st.limits.started {
		st.limits.started = true
		st.limits.requests = newTokenBucket(s.limits.RequestsPerSecond, s.limits.RequestBurst, s.clock.Now())
	}
	peer := st.peer
	var limit, msg string
	nl := s.nameLimitsLocked(typeURL)
	switch {
	case !st.limits.requests.allow(s.clock.Now()):
		limit, msg = limitRequestRate, "more than the allowed requests per second"
	case len(typeURL) > maxTypeURLBytes:
		limit, msg = limitTypeURL, "a type URL is longer than allowed"
	case st.types[typeURL] == nil && exceeds(len(st.types)+1, s.limits.MaxTypesPerStream):
		limit, msg = limitTypesPerStream, "the stream asks for more type URLs than allowed"
	case exceeds64(int64(sh.names), nl.requestNames):
		limit, msg = limitRequestNames, "a request names more resources than allowed"
	case exceeds(sh.longestName, nl.nameBytes) || exceeds(sh.longestTag, s.limits.MaxResourceNameBytes):
		limit, msg = limitNameLength, "a resource name, version or nonce is longer than allowed"
	case exceeds64(sh.listBytes, nl.bytes):
		limit, msg = limitRequestBytes, "a request's name list is larger than allowed"
	case sh.nodeBytes > maxNodeBytes:
		limit, msg = limitNodeSize, "the node is larger than allowed"
	}
	s.mu.Unlock()
	if limit == "" {
		return nil
	}
	return s.limitExceeded(peer, limit, msg, "type", clip(typeURL), "names", sh.names, "list_bytes", sh.listBytes,
		"longest_name", max(sh.longestName, sh.longestTag), "node_bytes", sh.nodeBytes)
}

// limitSubscription checks what a stream subscribes to of a type once a
// request changed it: how many names, how many bytes. Over a limit, the
// stream ends with ResourceExhausted.
func (s *DiscoveryServer) limitSubscription(key streamKey, typeURL string, sub *subscription) error {
	s.mu.Lock()
	st := s.streams[key]
	if st == nil {
		s.mu.Unlock()
		return nil // openWatch reports it
	}
	peer := st.peer
	nl := s.nameLimitsLocked(typeURL)
	s.mu.Unlock()
	n := len(sub.names)
	switch {
	case exceeds64(int64(n), nl.subscribedNames):
		return s.limitExceeded(peer, limitSubscribed, "the stream subscribes to more names of one type than allowed",
			"type", clip(typeURL), "names", n)
	case exceeds64(sub.nameBytes, nl.bytes):
		return s.limitExceeded(peer, limitSubscribedSize, "the stream's subscription to one type is larger than allowed",
			"type", clip(typeURL), "names", n, "bytes", sub.nameBytes)
	}
	return nil
}
