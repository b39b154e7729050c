package limits

import (
	"cmp"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
)

// Options bound what one ADS client can cost the server. A zero field
// means its default (Defaults); a negative one turns that limit off.
type Options struct {
	// SendTimeout is how long one response may wait to be written to a
	// stream. gRPC blocks a write while the stream's peer has not read
	// what was written before (flow control); a stream stuck past this is
	// closed with DeadlineExceeded and counted (pilot_xds_write_timeout),
	// and Envoy reconnects. Other streams never wait for it.
	SendTimeout time.Duration
	// MaxResourceNamesPerRequest bounds the resource names one request
	// may carry (resource_names, or a delta request's subscribe,
	// unsubscribe and initial versions together).
	MaxResourceNamesPerRequest int
	// MaxSubscribedNames bounds the names one stream may hold subscribed
	// for one type (delta subscriptions grow request by request).
	MaxSubscribedNames int
	// MaxTypesPerStream bounds the distinct type URLs one stream may ask
	// for; each costs per-stream state.
	MaxTypesPerStream int
	// RequestsPerSecond and RequestBurst are a token bucket per stream:
	// a stream sending faster is closed with ResourceExhausted and counted.
	RequestsPerSecond float64
	RequestBurst      int
	// StreamsPerSecond and StreamBurst admit new ADS streams at a bounded
	// rate, server-wide. A stream beyond it waits for its turn (until the
	// client gives up, or MaxQueuedStreams are waiting already), so
	// gateways reconnecting together after a restart all get in.
	StreamsPerSecond float64
	StreamBurst      int
	// SharedNamesBytes bounds the memory of the decoded request name
	// lists shared between streams (package wire); a longer list than a
	// quarter of it is decoded for its request alone.
	SharedNamesBytes int64
	// MaxResourceNameBytes bounds one resource name a request carries, and
	// every version and nonce in it: the server's own are far shorter. A
	// type whose served resources have longer names allows the longest.
	MaxResourceNameBytes int
	// MaxSubscribedBytes bounds, per stream and type, what a subscription
	// holds and each name list of one request, in bytes: a name counts its
	// length plus NameOverheadBytes (what holding it costs), an initial
	// resource version its name's and its own. It grows with what the
	// server serves of the type (see Served in served.go).
	MaxSubscribedBytes int
	// MaxStreamsPerIdentity bounds the open (and queued) ADS streams of
	// one verified ServiceAccount, however verified (token or
	// certificate); MaxStreamsPerPeer those of one client IP address,
	// authenticated or not. A new stream beyond either is refused with
	// ResourceExhausted.
	MaxStreamsPerIdentity int
	MaxStreamsPerPeer     int
	// MaxQueuedStreams bounds the new streams waiting for admission
	// (StreamsPerSecond); one more is refused with ResourceExhausted
	// rather than queued.
	MaxQueuedStreams int
}

// Defaults are the limits used for zero fields. The count and byte
// limits on names are floors: each grows with what the server serves of
// the type (twice the largest set of it any proxy is sent, see
// served.go), so no gateway is cut off however large the config, and the
// floors cover what a client names beyond that (bootstrap resources,
// names of a push being replaced). Admission leaves room for 500
// gateways reconnecting at once and 2,000 more waiting up to 10 s.
//
// Streams per identity and per peer: every replica of a gateway
// Deployment (and every pod of a proxyless gRPC Deployment) shares one
// ServiceAccount, each holds one ADS stream, and while a connection that
// died silently is found out (keepalive, up to 40 s) its replacement is a
// second one: 1,000 leaves room for 500 replicas reconnecting together.
// Pods have addresses of their own, but clients behind NAT or an
// east-west gateway, and the load tools on one host, share one.
var Defaults = Options{
	SendTimeout:                30 * time.Second,
	MaxResourceNamesPerRequest: 100_000,
	MaxSubscribedNames:         100_000,
	MaxTypesPerStream:          16,
	RequestsPerSecond:          100,
	RequestBurst:               200,
	StreamsPerSecond:           200,
	StreamBurst:                500,
	SharedNamesBytes:           wire.DefaultSharedNamesBytes,
	MaxResourceNameBytes:       1 << 10,
	MaxSubscribedBytes:         256 << 10,
	MaxStreamsPerIdentity:      1000,
	MaxStreamsPerPeer:          1000,
	MaxQueuedStreams:           2000,
}

// WithDefaults fills zero fields from Defaults.
func (l Options) WithDefaults() Options {
	d := Defaults
	l.SendTimeout = cmp.Or(l.SendTimeout, d.SendTimeout)
	l.MaxResourceNamesPerRequest = cmp.Or(l.MaxResourceNamesPerRequest, d.MaxResourceNamesPerRequest)
	l.MaxSubscribedNames = cmp.Or(l.MaxSubscribedNames, d.MaxSubscribedNames)
	l.MaxTypesPerStream = cmp.Or(l.MaxTypesPerStream, d.MaxTypesPerStream)
	l.RequestsPerSecond = cmp.Or(l.RequestsPerSecond, d.RequestsPerSecond)
	l.RequestBurst = cmp.Or(l.RequestBurst, d.RequestBurst)
	l.StreamsPerSecond = cmp.Or(l.StreamsPerSecond, d.StreamsPerSecond)
	l.StreamBurst = cmp.Or(l.StreamBurst, d.StreamBurst)
	l.SharedNamesBytes = cmp.Or(l.SharedNamesBytes, d.SharedNamesBytes)
	l.MaxResourceNameBytes = cmp.Or(l.MaxResourceNameBytes, d.MaxResourceNameBytes)
	l.MaxSubscribedBytes = cmp.Or(l.MaxSubscribedBytes, d.MaxSubscribedBytes)
	l.MaxStreamsPerIdentity = cmp.Or(l.MaxStreamsPerIdentity, d.MaxStreamsPerIdentity)
	l.MaxStreamsPerPeer = cmp.Or(l.MaxStreamsPerPeer, d.MaxStreamsPerPeer)
	l.MaxQueuedStreams = cmp.Or(l.MaxQueuedStreams, d.MaxQueuedStreams)
	return l
}

// exceeds reports whether n is over limit (a negative limit is off).
func exceeds(n, limit int) bool { return limit >= 0 && n > limit }

// exceeds64 is exceeds for int64 bounds.
func exceeds64(n, limit int64) bool { return limit >= 0 && n > limit }

// Limit labels of wayfinder_xds_limit_exceeded_total: a fixed set.
const (
	LimitRequestRate    = "request_rate"
	LimitRequestNames   = "request_names"
	LimitSubscribed     = "subscribed_names"
	LimitTypesPerStream = "types_per_stream"
	LimitTypeURL        = "type_url_length"
	LimitNameLength     = "name_length"
	LimitRequestBytes   = "request_bytes"
	LimitSubscribedSize = "subscribed_bytes"
	LimitNodeSize       = "node_size"
	LimitPerIdentity    = "streams_per_identity"
	LimitPerPeer        = "streams_per_peer"
	LimitQueue          = "admission_queue"
)

// Labels are every limit label, in the order the metric's help lists them.
var Labels = []string{LimitRequestRate, LimitRequestNames, LimitSubscribed, LimitTypesPerStream, LimitTypeURL,
	LimitNameLength, LimitRequestBytes, LimitSubscribedSize, LimitNodeSize, LimitPerIdentity, LimitPerPeer, LimitQueue}

// MaxTypeURLBytes bounds a requested type URL (Envoy's longest is about
// 80 bytes).
const MaxTypeURLBytes = 512
