package adsc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"k8s.io/utils/clock"
)

// initPhase is where Envoy's initialization stands: the cluster manager
// waits for CDS, then for the EDS of its clusters, and only then does the
// server start LDS (which pulls RDS).
type initPhase int

const (
	waitClusters initPhase = iota
	waitEndpoints
	initDone
)

// subscription is the client's side of one type on the stream: what it asks
// for and what it last accepted and received.
type subscription struct {
	requested bool
	wildcard  bool
	names     []string // sorted; unused when wildcard
	version   string   // last ACKed version_info
	nonce     string   // nonce of the last response received
}

// protocol is the xDS bookkeeping of one client. Only the stream goroutine
// (and Dial, before it starts) touches it.
//
// The subscriptions and state outlive a stream by design: a reconnecting
// mode would keep them, reset the nonces and sentNode, and re-send every
// requested type with its last accepted version, as Envoy does.
type protocol struct {
	c        *Client
	cfg      *Config
	logger   *slog.Logger
	ads      discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	sentNode bool
	subs     map[string]*subscription
	// state is the client's current state; every change is published.
	state *State

	phase initPhase
	timer clock.Timer
	// endpointsFailed is set when an EDS response was NACKed while
	// initializing: like Envoy, a failed fetch ends the wait.
	endpointsFailed bool
}

func newProtocol(c *Client, ads discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesClient) *protocol {
	return &protocol{c: c, cfg: &c.cfg, logger: c.logger, ads: ads, subs: map[string]*subscription{}, state: c.state}
}

// start sends the first request(s). It runs in Dial, so the initial fetch
// timer exists when Dial returns (tests drive it with a fake clock).
func (p *protocol) start() error {
	if err := p.subscribe(ClusterType, true, nil); err != nil {
		return err
	}
	if p.cfg.EagerLDS {
		p.phase = initDone
		if err := p.subscribe(ListenerType, true, nil); err != nil {
			return err
		}
	} else {
		p.armTimer()
	}
	p.c.publish(p.state, nil)
	return nil
}

// loop handles responses and timer expiries until the stream fails or ctx
// ends (nil then).
func (p *protocol) loop(ctx context.Context, responses <-chan *discoverygrpc.DiscoveryResponse, recvErr <-chan error) error {
	for {
		var timeout <-chan time.Time
		if p.timer != nil {
			timeout = p.timer.C()
		}
		var err error
		select {
		case <-ctx.Done():
			return nil
		case err = <-recvErr:
			return p.c.streamError(err)
		case resp := <-responses:
			err = p.handle(resp)
		case <-timeout:
			err = p.initTimedOut()
		}
		if err != nil {
			// A failed Send reports io.EOF; the cause comes from Recv.
			if errors.Is(err, io.EOF) {
				select {
				case err = <-recvErr:
				case <-ctx.Done():
					return nil
				}
			}
			return p.c.streamError(err)
		}
	}
}

// handle decides on one response, answers it, follows the config's
// references into EDS/RDS subscriptions and publishes the result.
func (p *protocol) handle(resp *discoverygrpc.DiscoveryResponse) error {
	typeURL := resp.GetTypeUrl()
	ev := Event{TypeURL: typeURL, Version: resp.GetVersionInfo(), Nonce: resp.GetNonce()}
	sub, ok := p.subs[typeURL]
	if !ok || !sub.requested {
		p.logger.Warn("ignoring a response for a type that was not requested", "type", typeURL, "version", ev.Version)
		ev.Kind = Ignored
		p.c.publish(nil, &ev)
		return nil
	}
	sub.nonce = resp.GetNonce()
	ts := p.state.Types[typeURL]
	ts.LastNonce = resp.GetNonce()

	d, err := decode(typeURL, resp.GetResources(), !p.cfg.SkipValidation)
	if d != nil {
		ev.Names = d.names
	}
	if err == nil && p.cfg.Reject != nil {
		err = p.cfg.Reject(typeURL, resp.GetResources())
	}
	if err != nil {
		ev.Kind, ev.Err = NACK, err
		ts.NACKs++
		ts.Error = err.Error()
		p.state = p.state.withType(typeURL, ts)
		p.logger.Info("NACK", "type", ShortName(typeURL), "version", ev.Version, "nonce", ev.Nonce, "err", err)
		if err := p.send(typeURL, &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}); err != nil {
			return err
		}
		if typeURL == EndpointType && p.phase == waitEndpoints {
			p.endpointsFailed = true
		}
	} else {
		ev.Kind = ACK
		sub.version = resp.GetVersionInfo()
		ts.Version, ts.Nonce, ts.Error = resp.GetVersionInfo(), resp.GetNonce(), ""
		ts.ACKs++
		p.state = p.apply(p.state.withType(typeURL, ts), typeURL, d, sub)
		p.logger.Debug("ACK", "type", ShortName(typeURL), "version", ev.Version, "nonce", ev.Nonce, "resources", len(d.names))
		if err := p.send(typeURL, nil); err != nil {
			return err
		}
	}

	// Follow references, from the state as it now stands (unchanged after a
	// NACK, so a rejected response changes no subscription).
	switch typeURL {
	case ClusterType:
		if p.phase == waitClusters {
			// Armed before the EDS request goes out, so whoever sees that
			// request knows the timer is running.
			p.phase = waitEndpoints
			p.armTimer()
		}
		if err := p.subscribe(EndpointType, false, edsNames(p.state.Clusters)); err != nil {
			return err
		}
	case ListenerType:
		if err := p.subscribe(RouteType, false, rdsNames(p.state.Listeners)); err != nil {
			return err
		}
	}
	if err := p.advanceInit(); err != nil {
		return err
	}
	p.c.publish(p.state, &ev)
	return nil
}

// apply returns st with an accepted response's resources. CDS and LDS
// responses are the whole set; EDS and RDS responses update the resources
// they carry (Envoy keeps the others), and only subscribed names are kept.
func (p *protocol) apply(st *State, typeURL string, d *decoded, sub *subscription) *State {
	next := *st
	switch typeURL {
	case ClusterType:
		next.Clusters = d.clusters
	case ListenerType:
		next.Listeners = d.listeners
	case EndpointType:
		next.Endpoints = merge(st.Endpoints, d.endpoints, sub.names, p.logger, typeURL)
	case RouteType:
		next.Routes = merge(st.Routes, d.routes, sub.names, p.logger, typeURL)
	}
	return &next
}

// merge overlays update on old, keeping only subscribed names.
func merge[M any](old, update map[string]M, subscribed []string, logger *slog.Logger, typeURL string) map[string]M {
	out := make(map[string]M, len(subscribed))
	for _, n := range subscribed {
		if m, ok := update[n]; ok {
			out[n] = m
		} else if m, ok := old[n]; ok {
			out[n] = m
		}
	}
	for n := range update {
		if _, ok := slices.BinarySearch(subscribed, n); !ok {
			logger.Debug("ignoring a resource that was not requested", "type", ShortName(typeURL), "name", n)
		}
	}
	return out
}

// subscribe sets what typeURL asks for and sends the request if that
// changed. Like Envoy, it opens no EDS/RDS watch before there is a name to
// ask for, but does tell the server when the last name goes away.
func (p *protocol) subscribe(typeURL string, wildcard bool, names []string) error {
	sub := p.subs[typeURL]
	if sub == nil {
		sub = &subscription{}
		p.subs[typeURL] = sub
	}
	if sub.requested && sub.wildcard == wildcard && slices.Equal(sub.names, names) {
		return nil
	}
	if !sub.requested && !wildcard && len(names) == 0 {
		return nil
	}
	sub.requested, sub.wildcard, sub.names = true, wildcard, slices.Clone(names)

	ts := p.state.Types[typeURL]
	ts.Wildcard, ts.Subscribed = wildcard, sub.names
	next := p.state.withType(typeURL, ts)
	// Drop what is no longer asked for, as Envoy drops a removed cluster's
	// endpoints and an unused route configuration.
	switch typeURL {
	case EndpointType:
		next.Endpoints = merge(next.Endpoints, nil, sub.names, p.logger, typeURL)
	case RouteType:
		next.Routes = merge(next.Routes, nil, sub.names, p.logger, typeURL)
	}
	p.state = next
	p.logger.Debug("subscribe", "type", ShortName(typeURL), "wildcard", wildcard, "names", names)
	return p.send(typeURL, nil)
}

// send writes typeURL's current request: an ACK (or a subscription change)
// when detail is nil, a NACK otherwise. Only the stream's first request
// carries the node.
func (p *protocol) send(typeURL string, detail *statuspb.Status) error {
	sub := p.subs[typeURL]
	req := &discoverygrpc.DiscoveryRequest{
		VersionInfo:   sub.version,
		ResponseNonce: sub.nonce,
		TypeUrl:       typeURL,
		ErrorDetail:   detail,
	}
	if !sub.wildcard {
		req.ResourceNames = slices.Clone(sub.names)
	}
	if !p.sentNode {
		req.Node = p.cfg.Node
		p.sentNode = true
	}
	return p.ads.Send(req)
}

// advanceInit starts LDS once the clusters are warm: every subscribed EDS
// name has endpoints, or the EDS fetch failed, or no cluster uses EDS.
func (p *protocol) advanceInit() error {
	if p.phase != waitEndpoints {
		return nil
	}
	if !p.endpointsFailed {
		if sub := p.subs[EndpointType]; sub != nil && sub.requested {
			for _, n := range sub.names {
				if _, ok := p.state.Endpoints[n]; !ok {
					return nil
				}
			}
		}
	}
	return p.startListeners()
}

// initTimedOut ends the current initialization wait, as Envoy's
// initial_fetch_timeout does.
func (p *protocol) initTimedOut() error {
	p.timer = nil
	p.logger.Warn("initial fetch timed out", "waiting_for", map[initPhase]string{waitClusters: "CDS", waitEndpoints: "EDS"}[p.phase])
	if p.phase == initDone {
		return nil
	}
	if err := p.startListeners(); err != nil {
		return err
	}
	p.c.publish(p.state, nil)
	return nil
}

func (p *protocol) startListeners() error {
	p.phase = initDone
	p.stopTimer()
	return p.subscribe(ListenerType, true, nil)
}

func (p *protocol) armTimer() {
	p.stopTimer()
	if p.cfg.InitialFetchTimeout > 0 {
		p.timer = p.cfg.Clock.NewTimer(p.cfg.InitialFetchTimeout)
	}
}

func (p *protocol) stopTimer() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}
