package limits

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// MaxNodeBytes bounds the node a request carries. A stream keeps its node
// id and labels for as long as it is open; Istio's node metadata (labels,
// annotations, proxy config) is a few KiB, and Kubernetes bounds a pod's
// annotations to 256 KiB. A node over it ends the stream before it is
// parsed (an invalid node within it is refused as invalid).
const MaxNodeBytes = 2 << 20

// ListShape is the size of one name list of a request, as the limits
// count it.
type ListShape struct {
	Names   int
	Bytes   int64 // each name's length plus NameOverheadBytes
	Longest int
}

// ShapeOf measures a name list.
func ShapeOf(list []string) ListShape {
	sh := ListShape{Names: len(list)}
	for _, n := range list {
		sh.Bytes += int64(len(n)) + NameOverheadBytes
		sh.Longest = max(sh.Longest, len(n))
	}
	return sh
}

// RequestShape is what a request asks the server to hold, measured before
// anything else looks at it.
type RequestShape struct {
	// Names counts the names of all its lists (as
	// Options.MaxResourceNamesPerRequest does).
	Names int
	// ListBytes is its largest name list's size.
	ListBytes int64
	// LongestName is its longest resource name, LongestTag its longest
	// version or nonce.
	LongestName, LongestTag int
	// NodeBytes is the size of the node it carries (0: none).
	NodeBytes int
}

// SotwShape measures a SotW request. known, when not nil, is the shape of
// the request's name list measured before: a request naming the very list
// the stream's subscription came from (an ACK: the codec shares the list,
// see wire.NameSet) is not walked again.
func SotwShape(req *discovery.DiscoveryRequest, known *ListShape) RequestShape {
	var ls ListShape
	if known != nil {
		ls = *known
	} else {
		ls = ShapeOf(req.GetResourceNames())
	}
	sh := RequestShape{Names: ls.Names, ListBytes: ls.Bytes, LongestName: ls.Longest,
		LongestTag: max(len(req.GetVersionInfo()), len(req.GetResponseNonce()))}
	if n := req.GetNode(); n != nil {
		sh.NodeBytes = proto.Size(n)
	}
	return sh
}

// DeltaShape measures a delta request: its subscribe, unsubscribe and
// initial version lists (an initial version counts its name and its own
// bytes).
func DeltaShape(req *discovery.DeltaDiscoveryRequest) RequestShape {
	sub, unsub := ShapeOf(req.GetResourceNamesSubscribe()), ShapeOf(req.GetResourceNamesUnsubscribe())
	initial := ListShape{Names: len(req.GetInitialResourceVersions())}
	longestVersion := 0
	for n, v := range req.GetInitialResourceVersions() {
		initial.Bytes += int64(len(n)+len(v)) + NameOverheadBytes
		initial.Longest = max(initial.Longest, len(n))
		longestVersion = max(longestVersion, len(v))
	}
	sh := RequestShape{
		Names:       sub.Names + unsub.Names + initial.Names,
		ListBytes:   max(sub.Bytes, unsub.Bytes, initial.Bytes),
		LongestName: max(sub.Longest, unsub.Longest, initial.Longest),
		LongestTag:  max(longestVersion, len(req.GetResponseNonce())),
	}
	if n := req.GetNode(); n != nil {
		sh.NodeBytes = proto.Size(n)
	}
	return sh
}

// Stream is one stream's own share of the limits: its request rate. The
// zero value is ready; the server guards it with the stream's state.
type Stream struct {
	requests *tokenBucket
	started  bool
}

// CheckRequest checks a request of a stream against the limits before
// anything else looks at it: the request rate, the type URL, the number
// of types the stream asks for (types it asked for before, and whether
// typeURL is a new one), and the names it carries (how many, how long,
// how many bytes a list, against nl) and its node. It returns the limit
// the request is over and why, or "" when it is within them; the caller
// ends the stream with RefuseRequest, once it let go of the lock
// guarding st.
func (l *Limiter) CheckRequest(st *Stream, typeURL string, types int, newType bool, sh RequestShape, nl Names) (limit, msg string) {
	if !st.started {
		st.started = true
		st.requests = newTokenBucket(l.opts.RequestsPerSecond, l.opts.RequestBurst, l.clock.Now())
	}
	switch {
	case !st.requests.allow(l.clock.Now()):
		return LimitRequestRate, "more than the allowed requests per second"
	case len(typeURL) > MaxTypeURLBytes:
		return LimitTypeURL, "a type URL is longer than allowed"
	case newType && exceeds(types+1, l.opts.MaxTypesPerStream):
		return LimitTypesPerStream, "the stream asks for more type URLs than allowed"
	case exceeds64(int64(sh.Names), nl.RequestNames):
		return LimitRequestNames, "a request names more resources than allowed"
	case exceeds(sh.LongestName, nl.NameBytes) || exceeds(sh.LongestTag, l.opts.MaxResourceNameBytes):
		return LimitNameLength, "a resource name, version or nonce is longer than allowed"
	case exceeds64(sh.ListBytes, nl.Bytes):
		return LimitRequestBytes, "a request's name list is larger than allowed"
	case sh.NodeBytes > MaxNodeBytes:
		return LimitNodeSize, "the node is larger than allowed"
	}
	return "", ""
}

// RefuseRequest counts and logs a request CheckRequest found over limit
// and returns the error that ends its stream (ResourceExhausted).
func (l *Limiter) RefuseRequest(peer, typeURL, limit, msg string, sh RequestShape) error {
	return l.Exceeded(peer, limit, msg, "type", Clip(typeURL), "names", sh.Names, "list_bytes", sh.ListBytes,
		"longest_name", max(sh.LongestName, sh.LongestTag), "node_bytes", sh.NodeBytes)
}

// CheckSubscription checks what a stream subscribes to of a type once a
// request changed it: how many names, how many bytes, against nl. Over a
// limit, it returns the error that ends the stream (ResourceExhausted),
// counted and logged.
func (l *Limiter) CheckSubscription(peer, typeURL string, names int, bytes int64, nl Names) error {
	switch {
	case exceeds64(int64(names), nl.SubscribedNames):
		return l.Exceeded(peer, LimitSubscribed, "the stream subscribes to more names of one type than allowed",
			"type", Clip(typeURL), "names", names)
	case exceeds64(bytes, nl.Bytes):
		return l.Exceeded(peer, LimitSubscribedSize, "the stream's subscription to one type is larger than allowed",
			"type", Clip(typeURL), "names", names, "bytes", bytes)
	}
	return nil
}
