package bootstrap

import (
	"cmp"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
)

// Limits bound what a client can make the server hold or do, at the gRPC
// level here and per ADS stream in XDS. Zero fields are defaults.
type Limits struct {
	// XDS are the per-stream limits of the discovery server.
	XDS xds.Limits
	// MaxRecvMsgBytes bounds one message a client sends (Istio's 4 MiB).
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
// xds.DefaultLimits. Keepalives are Istio's (30 s, 10 s, pings allowed
// every 15 s).
var DefaultLimits = Limits{
	MaxRecvMsgBytes:         4 << 20,
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

// HTTP/2 receive windows; gRPC ignores values under 64 KiB.
const (
	streamWindowBytes = 64 << 10
	connWindowBytes   = 1 << 20
)

// grpcServerOptions are the options of every gRPC server of the process
// (plaintext and TLS ADS): limits, keepalives and write buffers.
func grpcServerOptions(l Limits) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(l.MaxStreamsPerConnection),
		grpc.MaxRecvMsgSize(l.MaxRecvMsgBytes),
		// A shared write buffer is held only while a connection writes,
		// but a push wakes every connection at once and gRPC yields with
		// the buffer held when it has under 1,000 bytes to write (an
		// endpoint change), so under churn each of 500 connections held
		// one. gRPC's 32 KiB size: with 64 KiB the server's RSS under
		// endpoint churn was 47 MB higher, with 16 KiB file-mode CPU rose
		// by a fifth (more write syscalls for the large first configs).
		grpc.WriteBufferSize(32 << 10), grpc.SharedWriteBuffer(true),
		// Static flow-control windows turn off gRPC's bandwidth estimator.
		// It answers data from a client, when no estimate is under way,
		// with a window update and a PING, so every ACK of a push cost a
		// second write and a second read on both sides. ADS clients send
		// small requests, and the stream window bounds what one may park
		// unread (the estimator grew it up to 16 MiB). A request larger
		// than the window still arrives whole: gRPC widens the window for
		// a message being read.
		grpc.InitialWindowSize(streamWindowBytes), grpc.InitialConnWindowSize(connWindowBytes),
		// Envoy keeps ADS streams open for hours; keepalives find dead peers.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: l.KeepaliveTime, Timeout: l.KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.KeepaliveMinTime, PermitWithoutStream: true}),
	}
}
