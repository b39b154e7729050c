package xds

import (
	"cmp"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// pushState is what one push computed. Everything but groups is fixed once
// built; groups grows when a proxy with a new gateway configuration
// connects between pushes (written under pushMu and mu, so readers holding
// either see a consistent map).
type pushState struct {
	push *model.PushContext
	// clusters and endpoints are shared by every gateway view of the push.
	clusters, endpoints *typeSet
	// serviceErrors are those of the last service translation (clusters
	// and endpoints) and endpointErrors those of an endpoints-only push
	// since, kept for pushes that reuse them; with the push context's and
	// the groups' they are the push's errors (translationErrors).
	serviceErrors, endpointErrors []*config.Error
	// endpointsOnly marks a push that rebuilt load assignments alone.
	endpointsOnly bool
	groups        map[string]*group
	// upstream are the credentials the push's DestinationRules name,
	// computed once per push for the group keys.
	upstream []model.Credential
	// views are the clusters and endpoints of the proxy views other than
	// the default one (model.PushContext.ViewKey: a namespace with
	// DestinationRules of its own, or one exportTo treats apart), built
	// when a group first needs them. Written and read under pushMu.
	views map[string]*serviceView
}

// serviceView is the clusters and endpoints one proxy view gets instead
// of the push's shared ones.
type serviceView struct {
	clusters, endpoints *typeSet
	errors              []*config.Error
}

// proxylessKey is the group of every proxyless gRPC client. Gateway group
// keys are hex hashes or empty, so it cannot collide with one.
const proxylessKey = "proxyless-grpc"

// group is one distinct configuration (a gateway group, or the proxyless
// clients) and the view every proxy with it shares.
type group struct {
	key      string
	gateways []config.Key
	// listeners, routes and secrets are the group's own translation, kept
	// so an endpoints-only push can reuse them; clusters is set only for
	// the proxyless group (gateway groups share the push's).
	listeners, routes, secrets, clusters *typeSet
	// view is nil when the group's resources could not be assembled into
	// a consistent view; its proxies keep what they have.
	view   *view
	errors []*config.Error
	// scope is whom the group's secrets are for, and refused the secrets
	// its proxies are not sent (their filter chains are left out).
	scope   string
	refused []model.SecretRefusal
	// identity is the verified identity the group was translated for.
	identity *model.Identity
	// viewKey is the proxy view it was translated for ("" the default:
	// the push's clusters and endpoints).
	viewKey string
}

// secretsFor reports whether a proxy of identity id (nil: plaintext) may
// share g's view as far as its secrets go: g holds none, or it was built
// for an authenticated proxy of id's namespace and ServiceAccount (what a
// proxy may have depends on both). The group key already
// separates what the config says; this holds whatever a generator
// returns.
func (g *group) secretsFor(id *model.Identity) bool {
	if g.secrets == nil || len(g.secrets.items) == 0 {
		return true
	}
	return id != nil && g.identity != nil && g.identity.Namespace == id.Namespace && g.identity.ServiceAccount == id.ServiceAccount
}

// push computes config for every connected proxy and publishes the views.
// A request that is not Full (only endpoints changed) rebuilds endpoints
// alone when a full push has happened.
func (s *DiscoveryServer) push(req *model.PushRequest) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	start := s.clock.Now()

	// Endpoint changes keep the last push's Gateways, VirtualServices and
	// DestinationRules: a change to those is pushed in full by a request
	// of its own.
	var st *pushState
	if !req.Full && s.state != nil {
		st = s.endpointsPush(s.state.push.WithEndpoints(s.store, req.ConfigsUpdated, s.registries...), s.state, req)
	}
	full := st == nil
	switch {
	case full && s.state != nil && routingOnly(req):
		// Clusters and endpoints do not depend on Gateways or
		// VirtualServices: the last push's services and DestinationRules
		// (and the upstream credentials these name), clusters and
		// endpoints are kept, and only the gateway side is indexed and
		// translated again.
		prev := s.state
		s.intern.rotate(ldsIdx, rdsIdx, sdsIdx)
		// The views' clusters and endpoints depend on the same.
		st = &pushState{push: prev.push.WithRouting(s.store), groups: map[string]*group{}, clusters: prev.clusters, endpoints: prev.endpoints,
			serviceErrors: prev.serviceErrors, endpointErrors: prev.endpointErrors, upstream: prev.upstream, views: maps.Clone(prev.views)}
	case full:
		pc := model.NewScopedPushContext(s.scoping, s.store, s.registries...)
		svc, err := s.buildServices(pc)
		if err != nil {
			// Sending empty clusters would take every route down; keep the
			// last good push instead.
			s.log.Error("push abandoned: proxies keep their current config", "err", err, "reasons", req.ReasonList())
			return
		}
		s.intern.rotate(cdsIdx, edsIdx, ldsIdx, rdsIdx, sdsIdx)
		st = &pushState{push: pc, groups: map[string]*group{}, upstream: model.UpstreamCredentials(pc)}
		st.clusters, st.endpoints, st.serviceErrors = serviceResources(s.intern, "", svc)
	}

	// New proxies cannot register while pushMu is held, so this list is
	// complete; proxies that leave meanwhile are skipped below.
	s.mu.Lock()
	proxies := slices.Collect(maps.Values(s.proxies))
	// An endpoints-only push changes no group: each proxy keeps its own.
	var last map[*proxyState]string
	if st.endpointsOnly {
		last = make(map[*proxyState]string, len(proxies))
		for _, p := range proxies {
			if p.group != nil {
				last[p] = p.group.key
			}
		}
	}
	s.mu.Unlock()
	if s.warm && len(proxies) == 0 && !st.endpointsOnly {
		s.warmGateways(st)
	}
	slices.SortFunc(proxies, func(a, b *proxyState) int { return cmp.Compare(a.proxy.ID, b.proxy.ID) })
	assigned := make(map[*proxyState]*group, len(proxies))
	for _, p := range proxies {
		if key, ok := last[p]; ok && st.groups[key] != nil {
			assigned[p] = st.groups[key]
			continue
		}
		assigned[p], _ = s.groupFor(st, p.proxy)
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
	s.releaseOldPushes(st)

	s.logNewErrors(st)
	for _, r := range req.ReasonList() {
		s.metrics.triggers.WithLabelValues(r).Add(float64(req.Reasons[r]))
	}
	took := s.clock.Since(start)
	s.metrics.pushDuration.Observe(took.Seconds())
	s.log.Info("push", "full", full, "reasons", req.ReasonList(), "changed", len(req.ConfigsUpdated),
		"proxies", len(proxies), "groups", len(st.groups), "cds", st.clusters.version, "eds", st.endpoints.version,
		"duration", took)
	s.firstPushOnce.Do(func() { close(s.firstPushDone) })
}

// endpointsPush builds the state of an endpoints-only push from the last
// one: load assignments are rebuilt, everything else (clusters, every
// group's listeners, routes and secrets) is reused as it is, so only EDS
// versions change. It returns nil when a full push is needed instead (the
// translator panicked, or a cluster lost its assignment).
func (s *DiscoveryServer) endpointsPush(pc *model.PushContext, prev *pushState, req *model.PushRequest) *pushState {
	// Only the services the request names, when it names them.
	endpoints, errs, ok := s.partialEndpoints(pc, prev, req)
	if ok {
		s.intern.trim(edsIdx)
	} else {
		s.intern.rotate(edsIdx)
		eps, err := s.buildEndpoints(pc)
		if err != nil {
			return nil
		}
		endpoints, errs, ok = endpointResources(s.intern, "", prev.clusters, eps)
		if !ok {
			s.log.Info("endpoints-only push needs a full push: a cluster has no load assignment")
			return nil
		}
	}
	// The services' translation errors are kept from the last full push;
	// endpoint problems found now replace those of earlier endpoints-only
	// pushes (deduplicated when shown).
	st := &pushState{push: pc, clusters: prev.clusters, endpoints: endpoints, endpointsOnly: true,
		serviceErrors: prev.serviceErrors, endpointErrors: errs, groups: make(map[string]*group, len(prev.groups)), upstream: prev.upstream}
	for key, g := range prev.groups {
		ng := *g
		if g.key == proxylessKey || g.viewKey != "" {
			// Built again on demand, like a new group: its endpoints are
			// rebuilt and the rest reused by the interner (and the route
			// cache, for a view's group).
			continue
		}
		if g.view != nil {
			ng.view = newView(st.clusters, st.endpoints, g.listeners, g.routes, g.secrets)
		}
		st.groups[key] = &ng
	}
	return st
}

// routingOnly reports whether a full push changes only Gateways and
// VirtualServices (as listed in ConfigsUpdated; an empty list may be
// anything).
func routingOnly(req *model.PushRequest) bool {
	if len(req.ConfigsUpdated) == 0 {
		return false
	}
	for k := range req.ConfigsUpdated {
		if k.Kind != schema.Gateway && k.Kind != schema.VirtualService {
			return false
		}
	}
	return true
}

// groupFor returns the proxy's group in st, translating it if no proxy
// needed it yet (created reports that). The caller holds pushMu.
func (s *DiscoveryServer) groupFor(st *pushState, p *model.Proxy) (g *group, created bool) {
	if IsProxyless(p) {
		if g, ok := st.groups[proxylessKey]; ok {
			return g, false
		}
		g = s.proxylessGroup(st)
	} else {
		gws := st.push.GatewaysForProxy(p)
		// The key says what the group's secrets depend on (namespace,
		// ServiceAccount, authenticated or not), so proxies entitled to
		// different Secrets never share a view, and those entitled to the
		// same share one translation.
		scope := model.SecretScope{Identity: p.Identity, Authorizer: s.authz, Grants: s.grants}
		key := model.ScopedGatewayGroupKey(gws, scope, st.upstream)
		// So does what the proxy's namespace sees of DestinationRules,
		// services and VirtualServices, when that is not the default.
		push := st.push.ForProxy(p)
		if v := push.View(); v != "" {
			key += "/view/" + v
		}
		if g, ok := st.groups[key]; ok {
			if !g.secretsFor(p.Identity) {
				// The generator returned secrets the Gateways and
				// DestinationRules did not account for in the key: this
				// proxy gets its own translation rather than another
				// namespace's (or the secure port's) key material.
				key += "/" + scope.String()
				if g, ok := st.groups[key]; ok {
					return g, false
				}
				g = s.gatewayGroup(st, push, key, gws, scope)
				s.mu.Lock()
				st.groups[g.key] = g
				s.mu.Unlock()
				return g, true
			}
			return g, false
		}
		g = s.gatewayGroup(st, push, key, gws, scope)
	}
	s.mu.Lock()
	st.groups[g.key] = g
	s.mu.Unlock()
	return g, true
}

// gatewayGroup translates one gateway configuration, as push (st's push
// context as its proxies see it) says, into its view.
func (s *DiscoveryServer) gatewayGroup(st *pushState, push *model.PushContext, key string, gws []config.Config, scope model.SecretScope) *group {
	g := &group{key: key, gateways: make([]config.Key, len(gws)), scope: scope.String(), identity: scope.Identity, viewKey: push.View()}
	for i := range gws {
		g.gateways[i] = gws[i].Key()
	}
	clusters, endpoints := st.clusters, st.endpoints
	var err error
	if g.viewKey != "" {
		var sv *serviceView
		if sv, err = s.serviceView(st, push); err == nil {
			clusters, endpoints = sv.clusters, sv.endpoints
			g.errors = append(g.errors, sv.errors...)
		}
	}
	var res GatewayResources
	if err == nil {
		res, err = s.buildGateway(push, gws, scope)
	}
	if err == nil && scope.Identity == nil && len(res.Secrets) > 0 {
		// Whatever the generator says, key material never goes to an
		// unauthenticated proxy: without these, listeners naming them
		// are dropped by the consistency check below.
		s.log.Error("generator returned secrets for unauthenticated proxies; they are not sent", "group", key, "secrets", len(res.Secrets))
		res.Secrets = nil
	}
	if err == nil && scope.Identity == nil && len(res.UpstreamSecrets) > 0 {
		s.log.Error("generator returned upstream secrets for unauthenticated proxies; they are not sent", "group", key, "secrets", len(res.UpstreamSecrets))
		res.UpstreamSecrets = nil
	}
	if err == nil {
		g.refused = res.SecretRefusals
		var gerrs, uerrs []*config.Error
		g.listeners, g.routes, g.secrets, gerrs = gatewayResources(s.intern, "gateway/"+key, res)
		g.secrets, uerrs = withUpstreamSecrets(s.intern, "gateway/"+key, clusters, g.secrets, res.UpstreamSecrets)
		g.errors = slices.Concat(g.errors, gerrs, uerrs)
		v := newView(clusters, endpoints, g.listeners, g.routes, g.secrets)
		if err = v.consistent(); err == nil {
			g.view = v
		}
	}
	if err != nil {
		// A translator panic or an inconsistent view is a bug; keep the
		// group's proxies on their current config rather than send a
		// broken or empty one.
		s.log.Error("gateway group config not sent: its proxies keep their current config", "group", key, "gateways", g.gateways, "err", err)
		g.errors = append(g.errors, &config.Error{Source: "gateway group " + key, Message: err.Error()})
	}
	return g
}

// serviceView returns the clusters and endpoints of push's view (not the
// default one), translating them when no group of st needed them yet. The
// caller holds pushMu.
func (s *DiscoveryServer) serviceView(st *pushState, push *model.PushContext) (*serviceView, error) {
	if sv := st.views[push.View()]; sv != nil {
		return sv, nil
	}
	res, err := s.buildServices(push)
	if err != nil {
		return nil, err
	}
	sv := &serviceView{}
	sv.clusters, sv.endpoints, sv.errors = serviceResources(s.intern, "view/"+push.View(), res)
	if st.views == nil {
		st.views = map[string]*serviceView{}
	}
	st.views[push.View()] = sv
	return sv, nil
}

// proxylessGroup translates the proxyless gRPC resources of a push. On an
// endpoints-only push only their load assignments are taken from the
// translation; the rest is the last full push's.
func (s *DiscoveryServer) proxylessGroup(st *pushState) *group {
	g := &group{key: proxylessKey}
	res, err := s.buildProxyless(st.push)
	if err == nil {
		scope := "proxyless"
		var endpoints *typeSet
		var e1, e2, e3 []*config.Error
		prev := s.state
		if st.endpointsOnly && prev != nil && prev.push != st.push && prev.groups[proxylessKey] != nil && prev.groups[proxylessKey].view != nil {
			// Endpoints-only push: reuse everything but the endpoints.
			pg := prev.groups[proxylessKey]
			g.listeners, g.routes, g.clusters = pg.listeners, pg.routes, pg.clusters
			var ok bool
			endpoints, e3, ok = endpointResources(s.intern, scope, g.clusters, EndpointResources{Endpoints: res.Endpoints})
			if !ok {
				endpoints = pg.view.sets[edsIdx]
			}
			g.errors = slices.Concat(pg.errors, e3)
		} else {
			g.clusters, endpoints, e1 = serviceResources(s.intern, scope, ServiceResources{Clusters: res.Clusters, Endpoints: res.Endpoints})
			g.listeners, g.routes, _, e2 = gatewayResources(s.intern, scope, GatewayResources{Listeners: res.Listeners, Routes: res.Routes})
			g.errors = slices.Concat(res.Errors, e1, e2)
		}
		v := newView(g.clusters, endpoints, g.listeners, g.routes, nil)
		if err = v.consistent(); err == nil {
			g.view = v
		}
	}
	if err != nil {
		s.log.Error("proxyless config not sent: proxyless clients keep their current config", "err", err)
		g.errors = append(g.errors, &config.Error{Source: "proxyless", Message: err.Error()})
	}
	return g
}

// buildServices runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildServices(pc *model.PushContext) (res ServiceResources, err error) {
	s.metrics.translations.WithLabelValues("services").Inc()
	defer s.recoverTranslation("service", &err)
	return s.gen.BuildServices(pc), nil
}

// buildEndpoints runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildEndpoints(pc *model.PushContext) (res EndpointResources, err error) {
	s.metrics.translations.WithLabelValues("endpoints").Inc()
	defer s.recoverTranslation("endpoint", &err)
	return s.gen.BuildEndpoints(pc), nil
}

// buildGateway runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildGateway(pc *model.PushContext, gws []config.Config, scope model.SecretScope) (res GatewayResources, err error) {
	s.metrics.translations.WithLabelValues("gateway").Inc()
	defer s.recoverTranslation("gateway", &err)
	return s.gen.BuildGateway(pc, gws, scope), nil
}

// buildProxyless runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildProxyless(pc *model.PushContext) (res ProxylessResources, err error) {
	s.metrics.translations.WithLabelValues("proxyless").Inc()
	defer s.recoverTranslation("proxyless", &err)
	return s.gen.BuildProxyless(pc), nil
}

// recoverTranslation turns a translator panic into *err.
func (s *DiscoveryServer) recoverTranslation(what string, err *error) {
	if r := recover(); r != nil {
		s.log.Error(what+" translation panicked", "panic", r, "stack", string(debug.Stack()))
		*err = fmt.Errorf("%s translation panicked: %v", what, r)
	}
}

// setViewLocked gives p its group's view, notes for the convergence metric
// which types changed and since when, and answers the watches the change
// concerns. The caller holds mu.
func (s *DiscoveryServer) setViewLocked(p *proxyState, g *group, since time.Time) {
	p.group = g
	if g.view == nil || g.view == p.view {
		return
	}
	changed := allTypes
	if p.view != nil {
		changed = 0
		for i, t := range servedTypes {
			v := g.view.sets[i].version
			if v == p.view.sets[i].version {
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
	p.view = g.view
	s.notifyLocked(p, changed)
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
	all := slices.Concat(st.push.Errors, st.serviceErrors, st.endpointErrors)
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
