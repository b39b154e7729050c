package limits

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// streamCaps counts the ADS streams of each verified identity and each
// client address, from admission (waiting included) until the stream
// ends, and refuses a stream beyond Options.MaxStreamsPerIdentity or
// MaxStreamsPerPeer. Authentication has already happened (the secure
// port's interceptor runs before the handler); what a stream can make the
// server hold is bounded per stream by the other limits, so these bound
// what one ServiceAccount, or one address, can make it hold in all.
// Entries go when their count reaches zero: the maps hold only the
// identities and addresses that have streams.
type streamCaps struct {
	l          *Limiter
	maxID      int
	maxPeer    int
	mu         sync.Mutex
	byIdentity map[identityKey]int
	byPeer     map[string]int
}

// identityKey is a ServiceAccount, however it was verified.
type identityKey struct{ namespace, serviceAccount string }

func newStreamCaps(l *Limiter, o Options) *streamCaps {
	return &streamCaps{l: l, maxID: o.MaxStreamsPerIdentity, maxPeer: o.MaxStreamsPerPeer,
		byIdentity: map[identityKey]int{}, byPeer: map[string]int{}}
}

// acquire counts a new stream against its identity (if it has one) and its
// peer address, or refuses it with ResourceExhausted (counted and logged)
// when either is at its bound. release must be called once the stream ends.
func (c *streamCaps) acquire(ctx context.Context) (release func(), err error) {
	addr := PeerOf(ctx)
	host := peerHost(addr)
	var idk *identityKey
	if id := model.IdentityFrom(ctx); id != nil {
		idk = &identityKey{id.Namespace, id.ServiceAccount}
	}
	c.mu.Lock()
	limit := ""
	switch {
	case idk != nil && exceeds(c.byIdentity[*idk]+1, c.maxID):
		limit = LimitPerIdentity
	case host != "" && exceeds(c.byPeer[host]+1, c.maxPeer):
		limit = LimitPerPeer
	}
	if limit != "" {
		c.mu.Unlock()
		c.l.metrics.exceeded.WithLabelValues(limit).Inc()
		if limit == LimitPerIdentity {
			c.l.WarnPeer(addr, "ADS stream refused: its ServiceAccount holds as many streams as allowed", "limit", limit,
				"identity", Clip(idk.namespace+"/"+idk.serviceAccount), "max", c.maxID)
			return nil, status.Errorf(codes.ResourceExhausted, "ServiceAccount %s/%s holds %d ADS streams already (limit %s)",
				Clip(idk.namespace), Clip(idk.serviceAccount), c.maxID, limit)
		}
		c.l.WarnPeer(addr, "ADS stream refused: its address holds as many streams as allowed", "limit", limit, "max", c.maxPeer)
		return nil, status.Errorf(codes.ResourceExhausted, "address %s holds %d ADS streams already (limit %s)", Clip(host), c.maxPeer, limit)
	}
	if idk != nil {
		c.byIdentity[*idk]++
	}
	if host != "" {
		c.byPeer[host]++
	}
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if idk != nil {
				if c.byIdentity[*idk]--; c.byIdentity[*idk] <= 0 {
					delete(c.byIdentity, *idk)
				}
			}
			if host != "" {
				if c.byPeer[host]--; c.byPeer[host] <= 0 {
					delete(c.byPeer, host)
				}
			}
		})
	}, nil
}

// counts returns the streams counted for an identity and an address (for
// tests and debugging).
func (c *streamCaps) counts(namespace, serviceAccount, host string) (identity, peer int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byIdentity[identityKey{namespace, serviceAccount}], c.byPeer[host]
}

// peerHost is the IP address of a peer address ("" when there is none).
func peerHost(addr string) string {
	if addr == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
