package bootstrap

import (
	"context"
	"sync"

	"google.golang.org/grpc"
)

// drain is the first step of a clean shutdown (SIGTERM): readiness fails
// and new ADS streams are refused, the gRPC listeners stop accepting
// (GracefulStop closes them and sends GOAWAY to open connections), and the
// open streams are closed spread over Options.DrainDuration, each with
// codes.Unavailable so that the gateway reconnects, through the Service
// to another replica. GracefulStop's wait for the stream handlers is left
// running; shutdown bounds it by ShutdownGrace.
func (s *Server) drain() {
	s.discovery.StopAccepting()
	var wg sync.WaitGroup
	for _, g := range []*grpc.Server{s.grpc, s.secure} {
		if g != nil {
			wg.Go(g.GracefulStop)
		}
	}
	// Bounded in case a clock or a client misbehaves: the streams not
	// closed by then are closed at once.
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.DrainDuration+s.opts.ShutdownGrace)
	defer cancel()
	s.discovery.Drain(ctx, s.opts.DrainDuration)
	s.drained = &wg
}
