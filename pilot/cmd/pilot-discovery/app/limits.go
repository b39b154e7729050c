package app

import (
	"github.com/spf13/cobra"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
)

// addLimitFlags adds the flags of bootstrap.Limits; defaults are shown
// from bootstrap.DefaultLimits and limits.Defaults. Negative values turn
// an ADS limit off.
func addLimitFlags(cmd *cobra.Command, l *bootstrap.Limits) {
	f := cmd.Flags()
	g, x := bootstrap.DefaultLimits, limits.Defaults
	f.IntVar(&l.MaxRecvMsgBytes, "grpc-max-recv-msg-size", g.MaxRecvMsgBytes, "largest message (bytes) a client may send")
	f.Uint32Var(&l.MaxStreamsPerConnection, "grpc-max-streams-per-connection", g.MaxStreamsPerConnection, "concurrent streams per client connection (HTTP/2 MaxConcurrentStreams)")
	f.DurationVar(&l.KeepaliveTime, "grpc-keepalive-time", g.KeepaliveTime, "ping a connection idle this long")
	f.DurationVar(&l.KeepaliveTimeout, "grpc-keepalive-timeout", g.KeepaliveTimeout, "close a connection whose ping is not answered within this")
	f.DurationVar(&l.KeepaliveMinTime, "grpc-keepalive-min-time", g.KeepaliveMinTime, "shortest ping interval allowed to clients (faster: GOAWAY)")
	f.DurationVar(&l.XDS.SendTimeout, "xds-send-timeout", x.SendTimeout, "close an ADS stream whose client has not read a response within this (negative: never)")
	f.IntVar(&l.XDS.MaxResourceNamesPerRequest, "xds-max-names-per-request", x.MaxResourceNamesPerRequest, "resource names one ADS request may carry beyond twice the resources of its type served")
	f.IntVar(&l.XDS.MaxSubscribedNames, "xds-max-subscribed-names", x.MaxSubscribedNames, "resource names one ADS stream may subscribe to per type beyond twice the resources of the type served")
	f.IntVar(&l.XDS.MaxTypesPerStream, "xds-max-types-per-stream", x.MaxTypesPerStream, "distinct type URLs one ADS stream may ask for")
	f.Float64Var(&l.XDS.RequestsPerSecond, "xds-requests-per-second", x.RequestsPerSecond, "sustained requests per second per ADS stream (faster: stream closed with ResourceExhausted)")
	f.IntVar(&l.XDS.RequestBurst, "xds-request-burst", x.RequestBurst, "requests an ADS stream may send at once")
	f.Float64Var(&l.XDS.StreamsPerSecond, "xds-streams-per-second", x.StreamsPerSecond, "new ADS streams admitted per second; more wait their turn (up to --xds-max-queued-streams)")
	f.IntVar(&l.XDS.StreamBurst, "xds-stream-burst", x.StreamBurst, "new ADS streams admitted at once")
	f.Int64Var(&l.XDS.SharedNamesBytes, "xds-shared-names-bytes", x.SharedNamesBytes, "memory bound of the request name lists shared between streams")
	f.IntVar(&l.XDS.MaxResourceNameBytes, "xds-max-name-length", x.MaxResourceNameBytes, "longest resource name, version or nonce (bytes) an ADS request may carry; at least the longest name served")
	f.IntVar(&l.XDS.MaxSubscribedBytes, "xds-max-subscribed-bytes", x.MaxSubscribedBytes, "bytes one ADS stream may subscribe to per type (each name counts 64 more), beyond twice what is served of the type")
	f.IntVar(&l.XDS.MaxStreamsPerIdentity, "xds-max-streams-per-identity", x.MaxStreamsPerIdentity, "ADS streams one ServiceAccount may hold open or queued (more: refused with ResourceExhausted)")
	f.IntVar(&l.XDS.MaxStreamsPerPeer, "xds-max-streams-per-peer", x.MaxStreamsPerPeer, "ADS streams one client IP address may hold open or queued (more: refused with ResourceExhausted)")
	f.IntVar(&l.XDS.MaxQueuedStreams, "xds-max-queued-streams", x.MaxQueuedStreams, "new ADS streams that may wait for admission (more: refused with ResourceExhausted)")
}
