package xds

import (
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// proxyState is one connected proxy (node id) and its open streams. All
// fields are guarded by DiscoveryServer.mu.
type proxyState struct {
	proxy       *model.Proxy
	connectedAt time.Time
	streams     map[int64]*streamState
	// group and snapshot are what the last push (or the connect) gave the
	// proxy; nil until the first push after sync.
	group    *group
	snapshot *cache.Snapshot
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

// streamState is one ADS stream. All fields are guarded by mu.
type streamState struct {
	id       int64
	peer     string
	openedAt time.Time
	// proxy is nil until the stream's first request has been parsed.
	proxy *proxyState
	// types is the protocol state per type URL.
	types map[string]*typeStatus
}

// typeStatus is what one stream has been sent of one type and what the
// proxy said about it.
type typeStatus struct {
	sentVersion string
	sentNonce   string
	sentAt      time.Time
	sends       int

	ackedVersion string
	ackedAt      time.Time

	// nackedNonce is the nonce of a response the proxy rejected. Requests
	// that still carry it (the NACK itself, or a later request changing
	// resource names before another response) are treated as holding the
	// rejected version, so the cache does not send it again.
	nackedNonce string
	lastNack    *nackRecord
}

// nackRecord is the last rejection of a type on a stream.
type nackRecord struct {
	version string
	nonce   string
	message string
	code    int32
	at      time.Time
}

func (st *streamState) typeStatus(typeURL string) *typeStatus {
	ts := st.types[typeURL]
	if ts == nil {
		ts = &typeStatus{}
		st.types[typeURL] = ts
	}
	return ts
}
