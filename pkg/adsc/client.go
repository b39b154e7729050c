package adsc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Client is one Envoy-like ADS connection. Its methods are safe for
// concurrent use.
type Client struct {
	cfg    Config
	logger *slog.Logger
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	// done is closed once the stream's goroutines have exited.
	done      chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	state *State
	log   eventLog
	// changed is closed and replaced whenever state or log change, waking
	// every WaitFor and Cursor.Next.
	changed chan struct{}
	ended   bool
	endErr  error
}

// Dial connects to cfg.Address, opens the ADS stream and sends the first
// request (CDS, with the node). ctx bounds only the connecting; the stream
// runs until Close or until it fails (see Err and Done).
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxRecvMsgSize)),
	}
	if cfg.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(cfg.Token)))
	}
	opts = append(opts, cfg.DialOptions...)
	conn, err := grpc.NewClient(cfg.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("adsc: dial %s: %w", cfg.Address, err)
	}
	if err := waitReady(ctx, conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("adsc: connect to %s: %w", cfg.Address, err)
	}
	// The stream outlives ctx but keeps its values.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ads, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("adsc: open ADS stream to %s: %w", cfg.Address, err)
	}
	c := &Client{
		cfg:     cfg,
		logger:  cfg.Logger.With("node", cfg.Node.GetId(), "address", cfg.Address),
		conn:    conn,
		cancel:  cancel,
		done:    make(chan struct{}),
		state:   emptyState(),
		log:     eventLog{limit: cfg.EventLogSize},
		changed: make(chan struct{}),
	}
	p := newProtocol(c, ads)
	if err := p.start(); err != nil {
		if errors.Is(err, io.EOF) {
			// The server ended the stream before the request was sent (a
			// refused credential): its status comes with the next Recv.
			if _, rerr := ads.Recv(); rerr != nil && !errors.Is(rerr, io.EOF) {
				err = rerr
			}
		}
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("adsc: first request to %s: %w", cfg.Address, err)
	}
	go c.run(sctx, p, ads)
	return c, nil
}

// waitReady connects conn and waits until it is usable, failing on the
// first failed attempt rather than retrying: a test wants to know at once.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("connection is %s", s)
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}

// Close ends the stream and the connection and waits for the client's
// goroutines to exit. It is safe to call more than once.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.cancel()
		<-c.done
		err = c.conn.Close()
	})
	return err
}

// Done is closed when the stream has ended, by Close or by an error.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is nil while the stream runs; afterwards it is why it ended: ErrClosed
// after Close, otherwise the stream's error.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		return nil
	}
	return c.endErr
}

// State returns the current snapshot; see State for its rules.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.state
}

// WaitFor blocks until cond holds for the current state, checking it now and
// after every change. cond runs on the caller's goroutine and must not
// modify the state. It fails when ctx ends (the error describes the last
// state, to show what was missing) or when the stream ends first.
func (c *Client) WaitFor(ctx context.Context, cond func(State) bool) error {
	for {
		c.mu.Lock()
		st, wake, ended, endErr := c.state, c.changed, c.ended, c.endErr
		c.mu.Unlock()
		if cond(*st) {
			return nil
		}
		if ended {
			return fmt.Errorf("adsc: condition not met when the stream ended: %w", endErr)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("adsc: condition not met: %w; state: %s", ctx.Err(), st.summary())
		}
	}
}

// publish makes next (if not nil) the current state, appends ev (if not
// nil) to the log, and wakes the waiters.
func (c *Client) publish(next *State, ev *Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if next != nil {
		c.state = next
	}
	if ev != nil {
		c.log.append(*ev)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// run receives responses on one goroutine and handles them (sending ACKs,
// NACKs and subscription changes) on this one, the only sender on ads.
func (c *Client) run(ctx context.Context, p *protocol, ads discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesClient) {
	responses := make(chan *discoverygrpc.DiscoveryResponse)
	recvErr := make(chan error, 1)
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			resp, err := ads.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case responses <- resp:
			case <-ctx.Done():
				return
			}
		}
	}()

	err := p.loop(ctx, responses, recvErr)
	if ctx.Err() != nil {
		// Close cancelled the stream; whatever broke is a consequence.
		err = ErrClosed
	}
	p.stopTimer()
	c.cancel() // ends Recv when the loop stopped on a send error
	<-recvDone
	c.logger.Debug("ADS stream ended", "err", err)
	c.mu.Lock()
	c.ended, c.endErr = true, err
	c.log.append(Event{Kind: StreamEnd, Err: err})
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	close(c.done)
}

// streamError describes why the stream broke.
func (c *Client) streamError(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("adsc: stream to %s: server closed the stream", c.cfg.Address)
	}
	return fmt.Errorf("adsc: stream to %s: %w", c.cfg.Address, err)
}

// bearerToken sends a ServiceAccount token with every stream, over TLS only.
type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return true }
