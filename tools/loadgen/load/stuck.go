package load

import (
	"context"
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// openStuck opens n more gateways that ask for clusters and listeners and
// never read, with gRPC's fixed 64 KiB windows: the server's writes to
// them block once their first response is on its way (a broken or hostile
// client). They are opened before the measured gateways start, so the
// report shows what they cost everyone else. close ends them.
func (r *runner) openStuck(ctx context.Context, n int) (closeAll func(), err error) {
	var conns []*grpc.ClientConn
	closeAll = func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for i := range n {
		conn, err := grpc.NewClient("passthrough:///"+r.opts.Address, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("load: stuck gateway: %w", err)
		}
		conns = append(conns, conn)
		st, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("load: stuck gateway: %w", err)
		}
		node := r.node(r.opts.Gateways + i) // pods numbered after the measured gateways
		for j, typ := range []string{resource.ClusterType, resource.ListenerType} {
			req := &discovery.DiscoveryRequest{TypeUrl: typ}
			if j == 0 {
				req.Node = node
			}
			if err := st.Send(req); err != nil {
				closeAll()
				return nil, fmt.Errorf("load: stuck gateway: %w", err)
			}
		}
	}
	return closeAll, nil
}
