package xds

import (
	"context"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/subscription"
)

// proxyState is one connected proxy (node id) and its open streams. All
// fields are guarded by DiscoveryServer.mu.
type proxyState struct {
	proxy       *model.Proxy
	connectedAt time.Time
	streams     map[streamKey]*streamState
	// group and view are what the last push (or the connect) gave the
	// proxy; nil until the first push after sync.
	group *push.Group
	view  *snapshot.View
	// pending holds, per type URL, a change that was set but not yet
	// ACKed, for the convergence metric.
	pending map[string]pendingChange
}

// pendingChange is a version set for a proxy and when the config change
// behind it started.
type pendingChange struct {
	version string
	since   time.Time
}

// streamKey identifies a stream: state-of-the-world and delta streams are
// numbered independently.
type streamKey struct {
	delta bool
	id    int64
}

// streamState is one ADS stream. All fields are guarded by mu.
type streamState struct {
	key      streamKey
	peer     string
	openedAt time.Time
	// identity is what the client proved on the secure port (from the
	// stream's context); nil on the plaintext port.
	identity *model.Identity
	// cancel ends the stream (see evict.go); nil for streams not opened
	// through adsService (tests driving the callbacks directly).
	cancel context.CancelCauseFunc
	// proxy is nil until the stream's first request has been parsed.
	proxy *proxyState
	// types is the protocol state per type URL.
	types map[string]*typeStatus
	// limits is the stream's share of the server's limits.
	limits limits.Stream
}

// typeStatus is one stream's state for one type: the open watch, what was
// sent, and what the proxy said about it.
type typeStatus struct {
	typeURL string
	watch   *watch

	// sent is the set the last SotW response was cut from and sentNames
	// the names it answered (nil for a wildcard response). Together they
	// are what the proxy holds, accepted or not: a change is pushed only
	// when the view differs from them, so a NACKed response is not sent
	// again.
	sent      *snapshot.TypeSet
	sentNames map[string]struct{}
	// sentList is the request's name list sentNames was built from: an
	// ACK carries the same shared list (see wire/names.go), which says
	// "same names" without walking them (see sameNameList).
	sentList []string
	// inflight are responses put in the stream's outbox but not yet
	// written: they become sent in OnStreamResponse. (Ordered ADS drops a
	// queued response when a newer request of its type arrives.)
	inflight []*inflight

	sentVersion string
	sentNonce   string
	sentAt      time.Time
	sends       int

	ackedVersion string
	ackedAt      time.Time

	// nackedNonce is the nonce of a response the proxy rejected. A request
	// still carrying it (the NACK itself, or a later request changing
	// resource names before another response) holds the rejected content,
	// not the version it names.
	nackedNonce string
	lastNack    *nackRecord

	// deltaBuilt is the version map the last delta response handed to
	// the stream's loop and the set it was cut from; see deltaUnchanged.
	deltaBuilt *deltaBuilt
}

// deltaBuilt records a delta response's resulting version map.
type deltaBuilt struct {
	next map[string]string
	n    int
	set  *snapshot.TypeSet
	// shared: next is a set's own version map, which the client's
	// versions equal exactly those of set; never changed in place.
	shared bool
}

// inflight is a response queued for a stream.
type inflight struct {
	sotw  *discovery.DiscoveryResponse
	delta *discovery.DeltaDiscoveryResponse
	set   *snapshot.TypeSet
	names map[string]struct{}
	list  []string
}

// watch is an open request of one type on one stream, waiting for a view
// that differs from what the stream holds. It answers at most once.
type watch struct {
	st       *streamState
	ts       *typeStatus
	sotwReq  *discovery.DiscoveryRequest
	deltaReq *discovery.DeltaDiscoveryRequest
	sub      *subscription.Subscription
	sotwOut  *outbox[*sotwOut]
	deltaOut *outbox[*deltaOut]
}

// nackRecord is the last rejection of a type on a stream.
type nackRecord struct {
	version string
	nonce   string
	message string
	code    int32
	at      time.Time
	// patches are the EnvoyFilter patches that changed resources of the
	// rejected type for the proxy's gateway configuration.
	patches []string
}

func (st *streamState) typeStatus(typeURL string) *typeStatus {
	ts := st.types[typeURL]
	if ts == nil {
		ts = &typeStatus{typeURL: typeURL}
		st.types[typeURL] = ts
	}
	return ts
}
