package xds

import (
	"cmp"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// pushState is what one push computed. Everything but groups is fixed once
// built; groups grows when a proxy with a new gateway configuration
// connects between pushes (written under pushMu and mu, so readers holding
// either see a consistent map).
type pushState struct {
	push *model.PushContext
	// clusters and endpoints are shared by every snapshot of the push.
	clusters, endpoints cache.Resources
	// errors are the push context's and the service translation's.
	errors []*config.Error
	groups map[string]*group
}

// group is one distinct gateway configuration and the snapshot every proxy
// with it shares.
type group struct {
	key      string
	gateways []config.Key
	// snapshot is nil when the group's resources could not be assembled
	// into a consistent snapshot; its proxies keep what they have.
	snapshot *cache.Snapshot
	errors   []*config.Error
}

// push computes config for every connected proxy and sets the snapshots.
func (s *DiscoveryServer) push(req *model.PushRequest) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	start := s.clock.Now()

	pc := model.NewPushContext(s.store)
	st := &pushState{push: pc, groups: map[string]*group{}}
	svc, err := s.buildServices(pc)
	if err != nil {
		// Sending empty clusters would take every route down; keep the
		// last good push instead.
		s.log.Error("push abandoned: proxies keep their current config", "err", err, "reasons", req.ReasonList())
		return
	}
	var svcErrs []*config.Error
	st.clusters, st.endpoints, svcErrs = serviceResources(svc)
	st.errors = slices.Concat(pc.Errors, svcErrs)

	// New proxies cannot register while pushMu is held, so this list is
	// complete; proxies that leave meanwhile are skipped below.
	s.mu.Lock()
	proxies := slices.Collect(maps.Values(s.proxies))
	s.mu.Unlock()
	slices.SortFunc(proxies, func(a, b *proxyState) int { return cmp.Compare(a.proxy.ID, b.proxy.ID) })
	assigned := make(map[*proxyState]*group, len(proxies))
	for _, p := range proxies {
		assigned[p], _ = s.groupFor(st, p.proxy)
	}

	since := req.Start
	if since.IsZero() {
		since = start
	}
	s.mu.Lock()
	s.state = st
	for _, p := range proxies {
		if s.proxies[p.proxy.ID] != p {
			continue // disconnected during the push
		}
		s.setSnapshotLocked(p, assigned[p], since)
	}
	s.mu.Unlock()

	s.logNewErrors(st)
	for _, r := range req.ReasonList() {
		s.metrics.triggers.WithLabelValues(r).Add(float64(req.Reasons[r]))
	}
	took := s.clock.Since(start)
	s.metrics.pushDuration.Observe(took.Seconds())
	s.log.Info("push", "full", req.Full, "reasons", req.ReasonList(), "changed", len(req.ConfigsUpdated),
		"proxies", len(proxies), "groups", len(st.groups), "cds", st.clusters.Version, "eds", st.endpoints.Version,
		"duration", took)
	s.firstPushOnce.Do(func() { close(s.firstPushDone) })
}

// groupFor returns the proxy's gateway group in st, translating it if no
// proxy needed it yet (created reports that). The caller holds pushMu.
func (s *DiscoveryServer) groupFor(st *pushState, p *model.Proxy) (g *group, created bool) {
	gws := st.push.GatewaysForProxy(p)
	key := model.GatewayGroupKey(gws)
	if g, ok := st.groups[key]; ok {
		return g, false
	}
	g = &group{key: key, gateways: make([]config.Key, len(gws))}
	for i := range gws {
		g.gateways[i] = gws[i].Key()
	}
	res, err := s.buildGateway(st.push, gws)
	var snap *cache.Snapshot
	if err == nil {
		listeners, routes, errs := gatewayResources(res)
		g.errors = errs
		snap, err = newSnapshot(st.clusters, st.endpoints, listeners, routes)
	}
	if err != nil {
		// A translator panic or an inconsistent snapshot is a bug; keep
		// the group's proxies on their current config rather than send a
		// broken or empty one.
		s.log.Error("gateway group config not sent: its proxies keep their current config", "group", key, "gateways", g.gateways, "err", err)
		g.errors = append(g.errors, &config.Error{Source: "gateway group " + key, Message: err.Error()})
	}
	g.snapshot = snap
	s.mu.Lock()
	st.groups[key] = g
	s.mu.Unlock()
	return g, true
}

// buildServices runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildServices(pc *model.PushContext) (res ServiceResources, err error) {
	s.metrics.translations.WithLabelValues("services").Inc()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("service translation panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("service translation panicked: %v", r)
		}
	}()
	return s.gen.BuildServices(pc), nil
}

// buildGateway runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildGateway(pc *model.PushContext, gws []config.Config) (res GatewayResources, err error) {
	s.metrics.translations.WithLabelValues("gateway").Inc()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("gateway translation panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("gateway translation panicked: %v", r)
		}
	}()
	return s.gen.BuildGateway(pc, gws), nil
}

// setSnapshotLocked gives p its group's snapshot and notes, for the
// convergence metric, which types changed and since when. The caller holds
// mu.
func (s *DiscoveryServer) setSnapshotLocked(p *proxyState, g *group, since time.Time) {
	p.group = g
	if g.snapshot == nil || g.snapshot == p.snapshot {
		return
	}
	if p.snapshot != nil {
		for _, t := range servedTypes {
			v := g.snapshot.GetVersion(t)
			if v == p.snapshot.GetVersion(t) {
				continue
			}
			// A change not yet ACKed keeps its earlier start: the proxy
			// has not converged since then.
			if prev, ok := p.pending[t]; ok && prev.since.Before(since) {
				p.pending[t] = pendingChange{version: v, since: prev.since}
			} else {
				p.pending[t] = pendingChange{version: v, since: since}
			}
		}
	}
	p.snapshot = g.snapshot
	if err := s.cache.SetSnapshot(s.ctx, p.proxy.ID, g.snapshot); err != nil {
		s.log.Error("setting snapshot", "proxy", p.proxy.ID, "err", err)
	}
}

// currentErrors returns the source's standing errors and the translation
// errors of the last push, each deduplicated (a Gateway shared by two
// groups reports its problems once) and sorted. The caller must not hold mu.
func (s *DiscoveryServer) currentErrors() (source, translation []*config.Error) {
	if s.errors != nil {
		source = dedupErrors(s.errors.ConfigErrors())
	}
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	return source, s.translationErrors(st)
}

// translationErrors returns st's errors, deduplicated and sorted. The
// caller must not hold mu.
func (s *DiscoveryServer) translationErrors(st *pushState) []*config.Error {
	if st == nil {
		return nil
	}
	s.mu.Lock()
	all := slices.Clone(st.errors)
	for _, key := range slices.Sorted(maps.Keys(st.groups)) {
		all = append(all, st.groups[key].errors...)
	}
	s.mu.Unlock()
	return dedupErrors(all)
}

// logNewErrors logs the translation errors of st that the previous call
// did not see, so a standing problem is logged once rather than on every
// push. The caller holds pushMu, which guards loggedErrors.
func (s *DiscoveryServer) logNewErrors(st *pushState) {
	tr := s.translationErrors(st)
	now := make(map[string]bool, len(tr))
	for _, e := range tr {
		k := e.Error()
		now[k] = true
		if s.loggedErrors[k] {
			continue
		}
		if e.Warning {
			s.log.Warn("config warning", "err", k)
		} else {
			s.log.Warn("config error", "err", k)
		}
	}
	s.loggedErrors = now
}

func dedupErrors(errs []*config.Error) []*config.Error {
	seen := make(map[string]bool, len(errs))
	out := make([]*config.Error, 0, len(errs))
	for _, e := range errs {
		k := e.Error()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *config.Error) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Error(), b.Error()))
	})
	return out
}
