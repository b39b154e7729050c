package bootstrap

import (
	"cmp"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pkg/grpctransport"
)

// Limits bound what a client can make the server hold or do, at the gRPC
// level here and per ADS stream in XDS. Zero fields are defaults.
type Limits struct {
	// XDS are the per-stream limits of the discovery server.
	XDS limits.Options
	// MaxRecvMsgBytes bounds one message a client sends. It must fit the
	// largest request a gateway sends, its EDS request naming every
	// cluster: 5 MB at 100,000 services of 50-byte names, more than
	// Istio's 4 MiB. What a stream keeps of its requests is bounded by the
	// ADS limits on names (limits.Options), not by this.
	MaxRecvMsgBytes int
	// MaxStreamsPerConnection is HTTP/2's MaxConcurrentStreams: ADS needs
	// one stream per gateway, proxyless gRPC clients one per channel.
	MaxStreamsPerConnection uint32
	// KeepaliveTime and KeepaliveTimeout: the server pings a connection
	// idle for KeepaliveTime and closes it when no answer comes within
	// KeepaliveTimeout, so dead peers do not keep their streams.
	KeepaliveTime    time.Duration
	KeepaliveTimeout time.Duration
	// KeepaliveMinTime is the shortest interval at which a client may
	// ping; a client pinging more often is sent GOAWAY (too_many_pings).
	KeepaliveMinTime time.Duration
}

// DefaultLimits are the gRPC defaults; the ADS defaults are
// limits.Defaults. Keepalives are Istio's (30 s, 10 s, pings allowed
// every 15 s). 16 MiB messages carry the EDS request of 300,000 services.
var DefaultLimits = Limits{
	MaxRecvMsgBytes:         16 << 20,
	MaxStreamsPerConnection: 100,
	KeepaliveTime:           30 * time.Second,
	KeepaliveTimeout:        10 * time.Second,
	KeepaliveMinTime:        15 * time.Second,
}

func (l *Limits) applyDefaults() {
	d := DefaultLimits
	l.MaxRecvMsgBytes = cmp.Or(l.MaxRecvMsgBytes, d.MaxRecvMsgBytes)
	l.MaxStreamsPerConnection = cmp.Or(l.MaxStreamsPerConnection, d.MaxStreamsPerConnection)
	l.KeepaliveTime = cmp.Or(l.KeepaliveTime, d.KeepaliveTime)
	l.KeepaliveTimeout = cmp.Or(l.KeepaliveTimeout, d.KeepaliveTimeout)
	l.KeepaliveMinTime = cmp.Or(l.KeepaliveMinTime, d.KeepaliveMinTime)
}

func (l *Limits) validate() error {
	switch {
	case l.MaxRecvMsgBytes < 0:
		return fmt.Errorf("--grpc-max-recv-msg-size %d: must not be negative", l.MaxRecvMsgBytes)
	case l.KeepaliveTime < 0 || l.KeepaliveTimeout < 0 || l.KeepaliveMinTime < 0:
		return fmt.Errorf("--grpc-keepalive-time, --grpc-keepalive-timeout and --grpc-keepalive-min-time must not be negative")
	}
	return nil
}

// grpcServerOptions are the options of every gRPC server of the process
// (plaintext and TLS ADS): the transport's buffers and windows, limits and
// keepalives.
func grpcServerOptions(l Limits) []grpc.ServerOption {
	return append(grpctransport.ServerOptions(),
		grpc.MaxConcurrentStreams(l.MaxStreamsPerConnection),
		grpc.MaxRecvMsgSize(l.MaxRecvMsgBytes),
		// Envoy keeps ADS streams open for hours; keepalives find dead peers.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: l.KeepaliveTime, Timeout: l.KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.KeepaliveMinTime, PermitWithoutStream: true}),
	)
}
