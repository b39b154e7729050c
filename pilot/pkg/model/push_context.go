package model

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// PushContext is an immutable, indexed view of all config at one moment.
// It is built once per push and read, never written, by the translators,
// which may therefore run concurrently.
type PushContext struct {
	gateways         []config.Config
	virtualServices  []config.Config
	destinationRules []config.Config
	services         []*Service
	// telemetries are the valid Telemetry objects, oldest first (see
	// Telemetries).
	telemetries []config.Config
	// requestAuthentications and authorizationPolicies are the valid
	// security.istio.io objects, oldest first (see RequestAuthentications).
	requestAuthentications, authorizationPolicies []config.Config
	// envoyFilters are the valid EnvoyFilters in istiod's order (see
	// EnvoyFilters).
	envoyFilters []config.Config

	vsByGateway   map[string][]config.Config
	serviceByHost map[string]*Service

	// scoping, drs and the audiences decide what each proxy namespace
	// sees (push_view.go): drs is istiod's DestinationRule index; an
	// audience holds the namespaces that see services (svcAudience) or
	// VirtualServices (vsAudience) otherwise than the default view;
	// vsScoped is set when some VirtualService is not public.
	scoping                 Scoping
	drs                     *drIndex
	svcAudience, vsAudience map[string]bool
	vsScoped                bool
	// backendClientCerts is set when some Gateway carries
	// BackendClientCertificateAnnotation (see ViewKey).
	backendClientCerts bool
	// view and base are set in a push context made by ForProxy: the proxy
	// it answers for, and the push context it is a view of.
	view *view
	base *PushContext
	// topology is the gateway topology listeners are built for
	// (WithGatewayTopology); the zero value is istiod's default.
	topology GatewayTopology
	// telemetry is the access logging and tracing listeners are built
	// with (WithGatewayTelemetry); nil until set.
	telemetry *GatewayTelemetry
	// security is the authentication and authorization filters listeners
	// are built with (WithGatewaySecurity); nil until set.
	security *GatewaySecurity

	// Errors are cross-object problems found while indexing (two
	// ServiceEntries claiming one host, say). Translators report their own.
	// The first serviceErrors of them are the services' (WithServices
	// finds those again), the last routingErrors the Gateways' and
	// VirtualServices' (WithRouting finds those again).
	Errors                       []*config.Error
	serviceErrors, routingErrors int
	// servicesEpoch names the services and DestinationRules indexed: a
	// push context made by WithRouting has its source's (see
	// ServicesEpoch).
	servicesEpoch uint64
}

// epochs hands out servicesEpoch values.
var epochs atomic.Uint64

// ServicesEpoch identifies the services and DestinationRules ps indexed:
// two push contexts with the same epoch hold the same ones (the same
// objects), so whatever was derived from those alone in one holds in the
// other. Every push context that indexes them anew gets a new epoch.
func (ps *PushContext) ServicesEpoch() uint64 { return ps.servicesEpoch }

// ServiceDiscovery is a registry of services other than ServiceEntries:
// Kubernetes Services with their EndpointSlices, say. Services must return
// a snapshot the caller may keep and must not mutate.
type ServiceDiscovery interface {
	Services() []*Service
}

// NewPushContext indexes everything in store and in the registries, with
// istiod's default scoping (root namespace istio-system, everything
// exported everywhere).
func NewPushContext(store ConfigStore, registries ...ServiceDiscovery) *PushContext {
	return NewScopedPushContext(Scoping{}, store, registries...)
}

// NewScopedPushContext is NewPushContext with the given scoping.
func NewScopedPushContext(sc Scoping, store ConfigStore, registries ...ServiceDiscovery) *PushContext {
	ps := &PushContext{
		gateways:         store.List(schema.Gateway, ""),
		virtualServices:  sortByCreation(store.List(schema.VirtualService, "")),
		destinationRules: sortByCreation(store.List(schema.DestinationRule, "")),
		telemetries:      sortByCreation(store.List(schema.Telemetry, "")),
		scoping:          sc.withDefaults(),
		servicesEpoch:    epochs.Add(1),
	}
	ps.requestAuthentications = sortByCreation(store.List(schema.RequestAuthentication, ""))
	ps.authorizationPolicies = sortByCreation(store.List(schema.AuthorizationPolicy, ""))
	ps.envoyFilters = sortEnvoyFilters(store.List(schema.EnvoyFilter, ""))
	ps.indexServices(store, registries)
	ps.drs = indexDestinationRules(ps.destinationRules, ps.scoping)
	ps.Errors = append(ps.Errors, ps.drs.errors...)
	ps.Errors = append(ps.Errors, foreignRuleWarnings(ps.destinationRules, ps.services, ps.serviceByHost, ps.scoping.RootNamespace, ps.scoping.DomainSuffix)...)
	ps.indexRouting()
	return ps
}

// indexRouting indexes the VirtualServices by gateway and reports the
// routing problems, setting the trailing Errors.
func (ps *PushContext) indexRouting() {
	before := len(ps.Errors)
	ps.indexVirtualServices()
	ps.indexVirtualServiceAudience()
	ps.backendClientCerts = slices.ContainsFunc(ps.gateways, func(gw config.Config) bool {
		return gw.Annotations[BackendClientCertificateAnnotation] != ""
	})
	ps.reportMissingGateways()
	ps.routingErrors = len(ps.Errors) - before
}

// WithRouting returns a copy of ps with the Gateways and VirtualServices
// listed and indexed again from store, for a push of changes to those
// alone (the push then keeps its clusters and endpoints). Services and
// DestinationRules, and the problems found in them, stay ps's: indexing
// the services again, for nothing that could have changed, was a third of
// such a push's CPU at 5,000 services (BenchmarkOneVirtualServiceChange).
func (ps *PushContext) WithRouting(store ConfigStore) *PushContext {
	next := *ps
	next.gateways = store.List(schema.Gateway, "")
	next.virtualServices = sortByCreation(store.List(schema.VirtualService, ""))
	next.Errors = slices.Clip(ps.Errors[:len(ps.Errors)-ps.routingErrors])
	next.indexRouting()
	return &next
}

// indexVirtualServices fills vsByGateway, each gateway's list allocated at
// its size: appended one by one, the lists left as much again behind as
// garbage, every push (1.7 MB at 5,000 VirtualServices).
func (ps *PushContext) indexVirtualServices() {
	type binding struct {
		gateway string
		vs      int
	}
	binds := make([]binding, 0, len(ps.virtualServices))
	counts := map[string]int{}
	refused := ps.refusedBindings() // Gateway API isolation, gateway_isolation.go
	for i, vs := range ps.virtualServices {
		for _, gw := range vs.Spec.(*networking.VirtualService).GetGateways() {
			if gw == "mesh" {
				continue
			}
			key := ResolveGatewayName(gw, vs.Namespace)
			if refused[vsBinding{vs: vs.Key(), gateway: key}] {
				continue
			}
			binds = append(binds, binding{gateway: key, vs: i})
			counts[key]++
		}
	}
	ps.vsByGateway = make(map[string][]config.Config, len(counts))
	for _, b := range binds {
		list, ok := ps.vsByGateway[b.gateway]
		if !ok {
			list = make([]config.Config, 0, counts[b.gateway])
		}
		ps.vsByGateway[b.gateway] = append(list, ps.virtualServices[b.vs])
	}
}

// WithServices returns a copy of ps with the services indexed again, from
// the registries and the store's ServiceEntries, for a push of endpoint
// changes. Gateways, VirtualServices and DestinationRules, and the problems
// found in them, stay ps's: the push then translates load assignments
// only, and a change to those objects is pushed in full by a request of
// its own. Indexing them again was most of an endpoints push's own work.
func (ps *PushContext) WithServices(store ConfigStore, registries ...ServiceDiscovery) *PushContext {
	next := *ps
	next.Errors = nil
	next.servicesEpoch = epochs.Add(1)
	next.indexServices(store, registries)
	next.Errors = append(next.Errors, ps.Errors[ps.serviceErrors:]...)
	return &next
}

// WithEndpoints is WithServices for a push of endpoint changes alone, of
// the registry services named in changed: a registry asks for such a push
// only when a service's endpoints changed and nothing else (the same host
// and ports), and a change to a ServiceEntry is pushed in full. So the
// index is ps's with those services replaced, copied rather than built
// again from every registry's list and every ServiceEntry. When a named
// service is not found in ps under its host from the same source (it
// changed more than its endpoints meanwhile), it indexes everything, as
// WithServices does.
func (ps *PushContext) WithEndpoints(store ConfigStore, changed map[config.Key]struct{}, registries ...ServiceDiscovery) *PushContext {
	var repl []*Service
	for _, reg := range registries {
		for _, svc := range reg.Services() {
			if _, ok := changed[svc.Source]; !ok {
				continue
			}
			if old := ps.serviceByHost[svc.Hostname]; old == nil || old.Source != svc.Source {
				return ps.WithServices(store, registries...)
			}
			repl = append(repl, svc)
		}
	}
	if len(repl) == 0 {
		return ps.WithServices(store, registries...)
	}
	next := *ps
	next.servicesEpoch = epochs.Add(1)
	next.serviceByHost = maps.Clone(ps.serviceByHost)
	next.services = slices.Clone(ps.services)
	for _, svc := range repl {
		next.serviceByHost[svc.Hostname] = svc
		i, found := slices.BinarySearchFunc(next.services, svc.Hostname, func(s *Service, host string) int { return strings.Compare(s.Hostname, host) })
		if !found {
			return ps.WithServices(store, registries...)
		}
		next.services[i] = svc
	}
	return &next
}

// indexServices indexes the registries' services and the ServiceEntries'
// hosts, setting services, serviceByHost and the leading Errors.
// ServiceEntries and registry services share one host namespace: on a
// clash the registry service (a real Kubernetes Service) wins, as in Istio,
// and the ServiceEntry host is reported.
func (ps *PushContext) indexServices(store ConfigStore, registries []ServiceDiscovery) {
	ps.services = nil
	ps.serviceByHost = make(map[string]*Service, len(ps.serviceByHost))
	for _, reg := range registries {
		for _, svc := range reg.Services() {
			if prev, ok := ps.serviceByHost[svc.Hostname]; ok {
				ps.Errors = append(ps.Errors, &config.Error{Key: svc.Source, Message: "host " + svc.Hostname + " is already defined by " + prev.Source.String() + "; this definition is ignored", Warning: true})
				continue
			}
			ps.serviceByHost[svc.Hostname] = svc
			ps.services = append(ps.services, svc)
		}
	}
	for _, se := range sortByCreation(store.List(schema.ServiceEntry, "")) {
		for _, svc := range servicesFromServiceEntry(se) {
			if prev, ok := ps.serviceByHost[svc.Hostname]; ok {
				ps.Errors = append(ps.Errors, &config.Error{Source: se.Source, Key: se.Key(), Field: "spec.hosts",
					Message: "host " + svc.Hostname + " is already defined by " + prev.Source.String() + "; this definition is ignored", Warning: true})
				continue
			}
			ps.serviceByHost[svc.Hostname] = svc
			ps.services = append(ps.services, svc)
		}
	}
	slices.SortFunc(ps.services, func(a, b *Service) int { return strings.Compare(a.Hostname, b.Hostname) })
	ps.svcAudience = serviceAudience(ps.services, ps.scoping)
	ps.serviceErrors = len(ps.Errors)
}

// sortByCreation returns objects oldest first, then by namespace and name:
// the order Istio gives VirtualServices and DestinationRules that share a
// host. It sorts cs in place: a store's List gives the caller its own
// slice (one copy of 5,000 objects fewer per push).
func sortByCreation(cs []config.Config) []config.Config {
	slices.SortStableFunc(cs, func(a, b config.Config) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return cs
}

// ResolveGatewayName turns a VirtualService's gateway reference ("name" or
// "namespace/name") into "namespace/name".
func ResolveGatewayName(ref, vsNamespace string) string {
	if strings.Contains(ref, "/") {
		return ref
	}
	return vsNamespace + "/" + ref
}

// DomainSuffix is the cluster domain short host names are completed with
// (Scoping.DomainSuffix, "cluster.local" unless --domain-suffix says
// otherwise).
func (ps *PushContext) DomainSuffix() string {
	if ps.scoping.DomainSuffix == "" {
		return DefaultDomainSuffix // a push context not made by NewPushContext
	}
	return ps.scoping.DomainSuffix
}

// Mesh is the mesh config in force for this push (Scoping.Mesh): never
// nil, istiod's defaults when the server was given none. Read only; the
// same snapshot for every proxy of the push, so it needs no place in a
// gateway group key. A mesh config change is a full push with a new push
// context.
func (ps *PushContext) Mesh() *mesh.Config {
	if ps.scoping.Mesh == nil {
		return defaultMesh // a push context not made by NewPushContext
	}
	return ps.scoping.Mesh
}

// ResolveShortname is ResolveShortname under this push's cluster domain:
// "reviews" in namespace default is "reviews.default.svc.DOMAINSUFFIX".
func (ps *PushContext) ResolveShortname(host, namespace string) string {
	return ResolveShortname(host, namespace, ps.DomainSuffix())
}

// Gateways returns every Gateway, sorted by namespace and name.
func (ps *PushContext) Gateways() []config.Config { return ps.gateways }

// GatewaysForProxy returns the Gateways whose selector matches the proxy's
// labels, sorted by namespace and name. An empty selector matches every proxy.
func (ps *PushContext) GatewaysForProxy(p *Proxy) []config.Config {
	var out []config.Config
	for _, gw := range ps.gateways {
		if SubsetLabelsMatch(gw.Spec.(*networking.Gateway).GetSelector(), p.Labels) && servesProxyNamespace(gw, p) {
			out = append(out, gw)
		}
	}
	return out
}

// GatewayGroupKey identifies a distinct gateway configuration: proxies
// selected by the same Gateways get the same listeners and routes, so they
// share one translation and one snapshot. The empty set has key "".
func GatewayGroupKey(gws []config.Config) string {
	if len(gws) == 0 {
		return ""
	}
	h := sha256.New()
	for _, gw := range gws {
		h.Write([]byte(gw.Namespace + "/" + gw.Name + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// VirtualServices returns every VirtualService, oldest first.
func (ps *PushContext) VirtualServices() []config.Config { return ps.virtualServices }

// VirtualServicesForGateway returns the VirtualServices whose gateways field
// names the Gateway "namespace/name" and whose exportTo reaches the view's
// proxy namespace (istiod's VirtualServicesForGateway), oldest first.
func (ps *PushContext) VirtualServicesForGateway(gatewayKey string) []config.Config {
	return ps.visibleVirtualServices(ps.vsByGateway[gatewayKey])
}

// VirtualServicesBoundTo returns every VirtualService whose gateways field
// names the Gateway "namespace/name", whoever they are exported to, oldest
// first: for reports about the objects, not for translation.
func (ps *PushContext) VirtualServicesBoundTo(gatewayKey string) []config.Config {
	return ps.vsByGateway[gatewayKey]
}

// Telemetries returns every valid telemetry.istio.io Telemetry (a store
// holds valid objects only), oldest first, then by namespace and name. Each
// carries its name, namespace and creation time, which decide how istiod
// picks among Telemetries at one level; the spec is a
// *telemetry/v1alpha1.Telemetry (v1 is an alias), shared: read only. A
// change to a Telemetry is a full push (not a routing-only one). The
// telemetry translator (pilot/pkg/networking/telemetry) reads them for
// each gateway's access logging and tracing (GatewayTelemetry).
func (ps *PushContext) Telemetries() []config.Config { return ps.telemetries }

// RequestAuthentications returns every valid security.istio.io
// RequestAuthentication, oldest first, then by namespace and name (the
// order istiod merges their JWT rules in). The spec is a
// *security/v1beta1.RequestAuthentication (v1 is an alias), shared: read
// only. A change to one is a full push.
func (ps *PushContext) RequestAuthentications() []config.Config { return ps.requestAuthentications }

// AuthorizationPolicies returns every valid security.istio.io
// AuthorizationPolicy, oldest first, then by namespace and name. The spec
// is a *security/v1beta1.AuthorizationPolicy (v1 is an alias), shared:
// read only; the istio.io/dry-run annotation is in the object's
// Annotations. A change to one is a full push.
func (ps *PushContext) AuthorizationPolicies() []config.Config { return ps.authorizationPolicies }

// DestinationRules returns every DestinationRule, oldest first.
func (ps *PushContext) DestinationRules() []config.Config { return ps.destinationRules }

// Services returns every service exported to the view's proxy namespace,
// sorted by hostname.
func (ps *PushContext) Services() []*Service {
	if len(ps.svcAudience) == 0 {
		return ps.services // every service is public
	}
	out := make([]*Service, 0, len(ps.services))
	for _, svc := range ps.services {
		if ps.serviceVisible(svc) {
			out = append(out, svc)
		}
	}
	return out
}

// ServiceForHost returns the service with exactly this hostname if it is
// exported to the view's proxy namespace, or nil.
func (ps *PushContext) ServiceForHost(host string) *Service {
	svc := ps.serviceByHost[host]
	if svc == nil || (len(ps.svcAudience) > 0 && !ps.serviceVisible(svc)) {
		return nil
	}
	return svc
}

// DestinationRuleForHost returns the DestinationRule (merged, when several
// of one namespace name the host) that governs the service host for the
// view's proxy, or nil: the rules of the proxy's namespace first, then
// those of the service's namespace exported to it, then those of the root
// namespace exported to it, each the most specific host match (exact,
// then the longest wildcard). A host without a visible service has none,
// as in istiod.
func (ps *PushContext) DestinationRuleForHost(host string) *config.Config {
	svc := ps.ServiceForHost(host)
	if svc == nil || ps.drs == nil {
		return nil
	}
	ns := ps.viewNamespace()
	var labels map[string]string
	if ps.view != nil {
		labels = ps.view.labels
	}
	return pick(ps.drs.lookup(ns, svc.Namespace, host, ps.scoping.RootNamespace), ns, labels)
}

// Subset returns the named subset of host's DestinationRule, or nil.
func (ps *PushContext) Subset(host, name string) *networking.Subset {
	dr := ps.DestinationRuleForHost(host)
	if dr == nil {
		return nil
	}
	for _, s := range dr.Spec.(*networking.DestinationRule).GetSubsets() {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}
