package xds

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// push computes config for every connected proxy and publishes the views.
// A request that is not Full (only endpoints changed) rebuilds endpoints
// alone when a full push has happened.
func (s *DiscoveryServer) push(req *model.PushRequest) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	start := s.clock.Now()

	// A push is translated from the last one (package push).
	st := s.tr.Next(s.state, req)
	if st == nil {
		return // abandoned: proxies keep their current config
	}
	full := !st.EndpointsOnly

	// New proxies cannot register while pushMu is held, so this list is
	// complete; proxies that leave meanwhile are skipped below.
	s.mu.Lock()
	proxies := slices.Collect(maps.Values(s.proxies))
	// An endpoints-only push changes no group: each proxy keeps its own.
	var last map[*proxyState]string
	if st.EndpointsOnly {
		last = make(map[*proxyState]string, len(proxies))
		for _, p := range proxies {
			if p.group != nil {
				last[p] = p.group.Key
			}
		}
	}
	s.mu.Unlock()
	if len(proxies) == 0 && !st.EndpointsOnly {
		s.tr.Warm(st)
	}
	slices.SortFunc(proxies, func(a, b *proxyState) int { return cmp.Compare(a.proxy.ID, b.proxy.ID) })
	assigned := make(map[*proxyState]*push.Group, len(proxies))
	for _, p := range proxies {
		if key, ok := last[p]; ok && st.Groups[key] != nil {
			assigned[p] = st.Groups[key]
			continue
		}
		// s.state is still the last push's.
		assigned[p], _ = s.tr.GroupFor(s.state, st, p.proxy)
	}

	since := req.Start
	if since.IsZero() {
		since = start
	}
	s.mu.Lock()
	s.state = st
	s.served.pushed(s.clock.Now(), st)
	for _, p := range proxies {
		if s.proxies[p.proxy.ID] != p {
			continue // disconnected during the push
		}
		s.setViewLocked(p, assigned[p], since)
	}
	s.mu.Unlock()
	s.tr.Release(st)

	s.tr.LogNewErrors(st)
	for _, r := range req.ReasonList() {
		s.metrics.triggers.WithLabelValues(r).Add(float64(req.Reasons[r]))
	}
	took := s.clock.Since(start)
	s.metrics.pushDuration.Observe(took.Seconds())
	s.log.Info("push", "full", full, "reasons", req.ReasonList(), "changed", len(req.ConfigsUpdated),
		"proxies", len(proxies), "groups", len(st.Groups), "cds", st.Clusters.Version, "eds", st.Endpoints.Version,
		"duration", took)
	s.firstPushOnce.Do(func() { close(s.firstPushDone) })
}

// setViewLocked gives p its group's view, notes for the convergence metric
// which types changed and since when, and answers the watches the change
// concerns. The caller holds mu.
func (s *DiscoveryServer) setViewLocked(p *proxyState, g *push.Group, since time.Time) {
	p.group = g
	if g.View == nil || g.View == p.view {
		return
	}
	changed := allTypes
	if p.view != nil {
		changed = 0
		for i, t := range snapshot.Types {
			v := g.View.Sets[i].Version
			if v == p.view.Sets[i].Version {
				continue
			}
			changed |= 1 << i
			// A change not yet ACKed keeps its earlier start: the proxy
			// has not converged since then.
			if prev, ok := p.pending[t]; ok && prev.since.Before(since) {
				p.pending[t] = pendingChange{version: v, since: prev.since}
			} else {
				p.pending[t] = pendingChange{version: v, since: since}
			}
		}
	}
	p.view = g.View
	s.notifyLocked(p, changed)
}

// currentErrors returns the source's standing errors and the translation
// errors of the last push, each deduplicated (a Gateway shared by two
// groups reports its problems once) and sorted. The caller must not hold mu.
func (s *DiscoveryServer) currentErrors() (source, translation []*config.Error) {
	if s.errors != nil {
		source = push.DedupErrors(s.errors.ConfigErrors())
	}
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	return source, s.tr.Errors(st)
}
