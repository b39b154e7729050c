package push

import (
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/telemetry"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// groupInput is what a gateway group is translated from.
type groupInput struct {
	push    *model.PushContext
	key     string
	gws     []config.Config
	scope   model.SecretScope
	filters *groupFilters
}

// groupInputs are p's gateway group's key and inputs in st. The caller
// holds the push lock.
func (t *Translator) groupInputs(st *State, p *model.Proxy) groupInput {
	gws := st.Push.GatewaysForProxy(p)
	// The key says what the group's secrets depend on (namespace,
	// ServiceAccount, authenticated or not), so proxies entitled to
	// different Secrets never share a view, and those entitled to the
	// same share one translation.
	scope := model.SecretScope{Identity: p.Identity, Authorizer: t.authz, Grants: t.grants}
	key := model.ScopedGatewayGroupKey(gws, scope, st.upstream)
	// So does what the proxy's namespace sees of DestinationRules,
	// services and VirtualServices, when that is not the default.
	push := st.Push.ForProxy(p)
	if v := push.View(); v != "" {
		key += "/view/" + v
	}
	// And the proxy's gateway topology (its PROXY_CONFIG, else the
	// mesh default): trusted hops, client certificate details and
	// the PROXY protocol change its listeners.
	if topo := push.GatewayTopologyFor(p); topo.Key() != "" {
		key += "/topology/" + topo.Key()
		push = push.WithGatewayTopology(topo)
	}
	// And its access logging and tracing, which the mesh config, the
	// Telemetry objects selecting it (namespace, labels, Gateway API
	// gateway) and its node (namespace, PROXY_CONFIG, cluster) decide:
	// named by a hash of what they put on the listeners, so proxies
	// with the same telemetry share a translation.
	push, key = st.withTelemetry(push, p, key)
	// And the RequestAuthentications and AuthorizationPolicies that
	// select it, named by a hash of the filters they produce.
	push, key = t.withSecurity(st, push, p, key)
	// And the EnvoyFilters that apply to it, patched onto its
	// translation (and what their proxy matches read of it).
	key, gf := t.withEnvoyFilters(st, push, p, key)
	return groupInput{push: push, key: key, gws: gws, scope: scope, filters: gf}
}

// Unpatched translates p's gateway configuration in st without its
// EnvoyFilters, for a look at what the patches changed; nil when no
// EnvoyFilter applies to p (its served view is the unpatched one). Not
// kept. The caller holds the push lock.
func (t *Translator) Unpatched(st *State, p *model.Proxy) *Group {
	if IsProxyless(p) || st == nil {
		return nil
	}
	in := t.groupInputs(st, p)
	if in.filters == nil {
		return nil
	}
	return t.gatewayGroup(st, in.push, in.key+"/unpatched", in.gws, in.scope, nil)
}

// GroupFor returns the proxy's group in st, translating it if no proxy
// needed it yet (created reports that). last is the State last published
// (st itself once st is): an endpoints-only push takes the proxyless
// group's clusters, listeners and routes from it. A new group is added to
// st.Groups under Options.Lock. The caller holds the push lock.
func (t *Translator) GroupFor(last, st *State, p *model.Proxy) (g *Group, created bool) {
	if IsProxyless(p) {
		if g, ok := st.Groups[ProxylessKey]; ok {
			return g, false
		}
		g = t.proxylessGroup(last, st)
	} else {
		in := t.groupInputs(st, p)
		push, key, gws, scope, gf := in.push, in.key, in.gws, in.scope, in.filters
		if g, ok := st.Groups[key]; ok {
			if !g.secretsFor(p.Identity) {
				// The generator returned secrets the Gateways and
				// DestinationRules did not account for in the key: this
				// proxy gets its own translation rather than another
				// namespace's (or the secure port's) key material.
				key += "/" + scope.String()
				if g, ok := st.Groups[key]; ok {
					return g, false
				}
				g = t.gatewayGroup(st, push, key, gws, scope, gf)
				t.mu.Lock()
				st.Groups[g.Key] = g
				t.mu.Unlock()
				return g, true
			}
			return g, false
		}
		g = t.gatewayGroup(st, push, key, gws, scope, gf)
	}
	t.mu.Lock()
	st.Groups[g.Key] = g
	t.mu.Unlock()
	return g, true
}

// gatewayGroup translates one gateway configuration, as push (st's push
// context as its proxies see it) says, into its view.
func (t *Translator) gatewayGroup(st *State, push *model.PushContext, key string, gws []config.Config, scope model.SecretScope, gf *groupFilters) *Group {
	g := &Group{Key: key, Gateways: make([]config.Key, len(gws)), Scope: scope.String(), identity: scope.Identity, viewKey: push.View(),
		Telemetry: push.GatewayTelemetry(), Security: push.GatewaySecurity()}
	for i := range gws {
		g.Gateways[i] = gws[i].Key()
	}
	clusters, endpoints := st.Clusters, st.Endpoints
	var err error
	if g.viewKey != "" {
		var sv *ServiceView
		if sv, err = t.serviceView(st, push); err == nil {
			clusters, endpoints = sv.Clusters, sv.Endpoints
			g.errors = append(g.errors, sv.errors...)
		}
	}
	var res core.GatewayResources
	if err == nil {
		res, err = t.buildGateway(push, gws, scope)
	}
	if err == nil && scope.Identity == nil && len(res.Secrets) > 0 {
		// Whatever the generator says, key material never goes to an
		// unauthenticated proxy: without these, listeners naming them
		// are dropped by the consistency check below.
		t.log.Error("generator returned secrets for unauthenticated proxies; they are not sent", "group", key, "secrets", len(res.Secrets))
		res.Secrets = nil
	}
	if err == nil && scope.Identity == nil && len(res.UpstreamSecrets) > 0 {
		t.log.Error("generator returned upstream secrets for unauthenticated proxies; they are not sent", "group", key, "secrets", len(res.UpstreamSecrets))
		res.UpstreamSecrets = nil
	}
	if err == nil && gf != nil {
		var patched []*clusterv3.Cluster
		var efErrs []*config.Error
		patched, g.EnvoyFilters, efErrs = t.applyEnvoyFilters(st, gf, &res, clusters)
		g.errors = append(g.errors, efErrs...)
		if patched != nil {
			var cerrs []*config.Error
			clusters, endpoints, cerrs = snapshot.PatchedServiceSets(t.intern, "gateway/"+key, patched, endpoints)
			g.clusters = clusters
			g.errors = append(g.errors, cerrs...)
		}
	}
	if err == nil {
		g.Refused = res.SecretRefusals
		var gerrs, uerrs []*config.Error
		g.listeners, g.routes, g.secrets, gerrs = gatewayResources(t.intern, "gateway/"+key, res)
		g.secrets, uerrs = withUpstreamSecrets(t.intern, "gateway/"+key, clusters, g.secrets, res.UpstreamSecrets)
		g.errors = slices.Concat(g.errors, gerrs, uerrs)
		v := snapshot.NewView(clusters, endpoints, g.listeners, g.routes, g.secrets)
		if err = v.Consistent(); err == nil {
			g.View = v
		}
	}
	if err != nil {
		// A translator panic or an inconsistent view is a bug; keep the
		// group's proxies on their current config rather than send a
		// broken or empty one.
		t.log.Error("gateway group config not sent: its proxies keep their current config", "group", key, "gateways", g.Gateways, "err", err)
		g.errors = append(g.errors, &config.Error{Source: "gateway group " + key, Message: err.Error()})
	}
	return g
}

// serviceView returns the clusters and endpoints of push's view (not the
// default one), translating them when no group of st needed them yet. The
// caller holds the push lock.
func (t *Translator) serviceView(st *State, push *model.PushContext) (*ServiceView, error) {
	if sv := st.Views[push.View()]; sv != nil {
		return sv, nil
	}
	res, err := t.buildServices(push)
	if err != nil {
		return nil, err
	}
	sv := &ServiceView{}
	sv.Clusters, sv.Endpoints, sv.errors = serviceResources(t.intern, "view/"+push.View(), res)
	if st.Views == nil {
		st.Views = map[string]*ServiceView{}
	}
	st.Views[push.View()] = sv
	return sv, nil
}

// proxylessGroup translates the proxyless gRPC resources of a push. On an
// endpoints-only push only their load assignments are taken from the
// translation; the rest is the last full push's (last, the State last
// published).
func (t *Translator) proxylessGroup(last, st *State) *Group {
	g := &Group{Key: ProxylessKey}
	res, err := t.buildProxyless(st.Push)
	if err == nil {
		scope := "proxyless"
		var endpoints *snapshot.TypeSet
		var e1, e2, e3 []*config.Error
		prev := last
		if st.EndpointsOnly && prev != nil && prev.Push != st.Push && prev.Groups[ProxylessKey] != nil && prev.Groups[ProxylessKey].View != nil {
			// Endpoints-only push: reuse everything but the endpoints.
			pg := prev.Groups[ProxylessKey]
			g.listeners, g.routes, g.clusters = pg.listeners, pg.routes, pg.clusters
			var ok bool
			endpoints, e3, ok = endpointResources(t.intern, scope, g.clusters, core.EndpointResources{Endpoints: res.Endpoints})
			if !ok {
				endpoints = pg.View.Sets[snapshot.EDS]
			}
			g.errors = slices.Concat(pg.errors, e3)
		} else {
			g.clusters, endpoints, e1 = serviceResources(t.intern, scope, core.ServiceResources{Clusters: res.Clusters, Endpoints: res.Endpoints})
			g.listeners, g.routes, _, e2 = gatewayResources(t.intern, scope, core.GatewayResources{Listeners: res.Listeners, Routes: res.Routes})
			g.errors = slices.Concat(res.Errors, e1, e2)
		}
		v := snapshot.NewView(g.clusters, endpoints, g.listeners, g.routes, nil)
		if err = v.Consistent(); err == nil {
			g.View = v
		}
	}
	if err != nil {
		t.log.Error("proxyless config not sent: proxyless clients keep their current config", "err", err)
		g.errors = append(g.errors, &config.Error{Source: "proxyless", Message: err.Error()})
	}
	return g
}

// proxyTelemetry is one proxy's telemetry and its key.
type proxyTelemetry struct {
	tel *model.GatewayTelemetry
	key string
}

// withTelemetry returns push building p's listeners with p's telemetry,
// and key extended by it.
func (st *State) withTelemetry(push *model.PushContext, p *model.Proxy, key string) (*model.PushContext, string) {
	in := telemetryInputKey(push, p)
	pt, ok := st.telemetry[in]
	if !ok {
		tel := telemetry.ForProxy(push, p).Gateway()
		pt = proxyTelemetry{tel: tel, key: telemetry.Key(tel)}
		if st.telemetry == nil {
			st.telemetry = map[string]proxyTelemetry{}
		}
		st.telemetry[in] = pt
	}
	return push.WithGatewayTelemetry(pt.tel), key + "/telemetry/" + pt.key
}

// telemetryInputKey names everything of p and its view that
// telemetry.ForProxy reads besides the push itself.
func telemetryInputKey(push *model.PushContext, p *model.Proxy) string {
	var b strings.Builder
	for _, s := range []string{push.View(), p.Namespace, p.ServiceCluster, p.MeshID, p.ClusterID, p.IstioVersion} {
		b.WriteString(strconv.Quote(s))
	}
	writeLabels(&b, p.Labels)
	if p.ProxyConfig != nil {
		pc, _ := proto.MarshalOptions{Deterministic: true}.Marshal(p.ProxyConfig) // a parsed ProxyConfig always encodes
		b.WriteString("|" + hex.EncodeToString(pc))
	}
	return b.String()
}

// withSecurity returns push building p's listeners with p's
// authentication and authorization filters, and key extended by them
// (unchanged when no policy applies).
func (t *Translator) withSecurity(st *State, push *model.PushContext, p *model.Proxy, key string) (*model.PushContext, string) {
	if len(push.RequestAuthentications()) == 0 && len(push.AuthorizationPolicies()) == 0 {
		return push, key
	}
	in := securityInputKey(push, p)
	sec, ok := st.security[in]
	if !ok {
		// Across pushes too, while nothing it reads has changed (a push
		// for one VirtualService need not translate 500 policies again).
		if sec, ok = t.secCache.lookup(st, t.jwks, in); !ok {
			sec = security.ForProxy(push, p, security.Options{JWKS: t.jwks})
			t.secCache.store(in, sec)
		}
		if st.security == nil {
			st.security = map[string]*model.GatewaySecurity{}
		}
		st.security[in] = sec
	}
	if sec == nil {
		return push, key
	}
	return push.WithGatewaySecurity(sec), key + "/security/" + sec.Key
}

// securityInputKey names everything of p and its view that
// security.ForProxy reads besides the push itself: the view (provider
// clusters), namespace and labels (attachment), and the topology
// (trusted hops).
func securityInputKey(push *model.PushContext, p *model.Proxy) string {
	var b strings.Builder
	for _, s := range []string{push.View(), p.Namespace, push.GatewayTopology().Key()} {
		b.WriteString(strconv.Quote(s))
	}
	writeLabels(&b, p.Labels)
	return b.String()
}

// writeLabels writes labels to b in a form that names them exactly (sorted,
// quoted), for the keys proxies' derived inputs are cached by.
func writeLabels(b *strings.Builder, labels map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(strconv.Quote(k) + "=" + strconv.Quote(labels[k]))
	}
}
