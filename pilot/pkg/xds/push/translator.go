package push

import (
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authn"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/grpcgen"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Options configure a Translator. The discovery server fills them from
// its own options.
type Options struct {
	// Store is read once per push to build the push context. Required.
	Store model.ConfigStore
	// Registries add services to every push context besides the store's
	// ServiceEntries.
	Registries []model.ServiceDiscovery
	// Scoping is how config of one namespace reaches proxies of another.
	// An empty RootNamespace means the mesh config's rootNamespace.
	Scoping model.Scoping
	// Mesh returns the mesh config in force, read once per full push (its
	// snapshot is the push context's Mesh). nil means istiod's defaults.
	Mesh func() *mesh.Config
	// Generator translates config. Required.
	Generator core.Generator
	// JWKS resolves RequestAuthentication jwksUris for the gateways'
	// jwt_authn filters; nil serves rules without inline jwks
	// fail-closed.
	JWKS authn.JWKSResolver
	// SecretAuthorizer and GatewaySecretGrants decide which Secrets of
	// another namespace a proxy may have (they are part of a group's key).
	SecretAuthorizer    model.SecretAuthorizer
	GatewaySecretGrants model.GatewaySecretGrants
	// WarmGateways translates each Gateway selector's configuration when a
	// full push finds no proxy connected (see Warm).
	WarmGateways bool
	// Logger is required.
	Logger *slog.Logger
	// Translations counts translator runs by what (the server's
	// wayfinder_translations_total). Required.
	Translations *prometheus.CounterVec
	// Marshaled, when set, is called with the type URL of each resource
	// marshaled into a new shared Any (for a metric).
	Marshaled func(typeURL string)
	// Lock is the server's lock (its mu) guarding what readers outside a
	// push see: the translator takes it, briefly, for the writes those
	// readers may race with (see the package comment). Required.
	Lock sync.Locker
}

// Translator turns push requests into States and proxies into their
// groups. It holds what is kept from one push to the next: the interner
// and the generator's caches. Next, GroupFor, Warm, Release and
// LogNewErrors must be called with the caller's push lock held, and
// never with Options.Lock held (see the package comment).
type Translator struct {
	store      model.ConfigStore
	registries []model.ServiceDiscovery
	scoping    model.Scoping
	mesh       func() *mesh.Config
	gen        core.Generator
	jwks       authn.JWKSResolver
	// withheld are EnvoyFilter patches gateways rejected, per resource.
	withheld withholding
	// secCache keeps gateway security across pushes (securitycache.go).
	secCache securityCache
	warm     bool
	authz    model.SecretAuthorizer
	grants   model.GatewaySecretGrants
	log      *slog.Logger
	// translations is the server's wayfinder_translations_total.
	translations *prometheus.CounterVec
	marshaled    func(typeURL string)
	// intern keeps each generated resource's marshaled form (package snapshot).
	intern *snapshot.Interner
	// mu is Options.Lock.
	mu sync.Locker
	// loggedErrors are the translation errors already logged (under the
	// push lock).
	loggedErrors map[string]bool
}

// New returns a translator with an empty interner.
func New(opts Options) *Translator {
	return &Translator{
		store:        opts.Store,
		registries:   opts.Registries,
		scoping:      opts.Scoping,
		mesh:         opts.Mesh,
		gen:          opts.Generator,
		jwks:         opts.JWKS,
		warm:         opts.WarmGateways,
		authz:        opts.SecretAuthorizer,
		grants:       opts.GatewaySecretGrants,
		log:          opts.Logger,
		translations: opts.Translations,
		marshaled:    opts.Marshaled,
		intern:       snapshot.NewInterner(opts.Marshaled),
		mu:           opts.Lock,
	}
}

// Generator returns the generator the translator runs.
func (t *Translator) Generator() core.Generator { return t.gen }

// Interner returns the interner holding the pushes' resources.
func (t *Translator) Interner() *snapshot.Interner { return t.intern }

// ResetInterner replaces the interner with an empty one, so the next push
// marshals everything again, as the first did (for benchmarks; no push
// may be running).
func (t *Translator) ResetInterner() { t.intern = snapshot.NewInterner(t.marshaled) }

// Next computes the State of the push req asks for, given the last
// published one (nil before the first push): an endpoints-only push when
// req is not Full and it can be, else a full one (the gateway side alone
// when req changes only routing). Groups are added by GroupFor. It
// returns nil when the push is abandoned (the service translation
// panicked): proxies keep their current config. The caller holds the
// push lock.
func (t *Translator) Next(prev *State, req *model.PushRequest) *State {
	// Endpoint changes keep the last push's Gateways, VirtualServices and
	// DestinationRules: a change to those is pushed in full by a request
	// of its own.
	var st *State
	if !req.Full && prev != nil {
		st = t.endpointsPush(prev.Push.WithEndpoints(t.store, req.ConfigsUpdated, t.registries...), prev, req)
	}
	full := st == nil
	switch {
	case full && prev != nil && routingOnly(req):
		// Clusters and endpoints do not depend on Gateways or
		// VirtualServices: the last push's services and DestinationRules
		// (and the upstream credentials these name), clusters and
		// endpoints are kept, and only the gateway side is indexed and
		// translated again.
		t.intern.Rotate(snapshot.LDS, snapshot.RDS, snapshot.SDS)
		// The views' clusters and endpoints depend on the same.
		st = &State{Push: prev.Push.WithRouting(t.store), Groups: map[string]*Group{}, Clusters: prev.Clusters, Endpoints: prev.Endpoints,
			serviceErrors: prev.serviceErrors, endpointErrors: prev.endpointErrors, upstream: prev.upstream, Views: maps.Clone(prev.Views)}
	case full:
		pc := model.NewScopedPushContext(t.pushScoping(), t.store, t.registries...)
		svc, err := t.buildServices(pc)
		if err != nil {
			// Sending empty clusters would take every route down; keep the
			// last good push instead.
			t.log.Error("push abandoned: proxies keep their current config", "err", err, "reasons", req.ReasonList())
			return nil
		}
		t.intern.Rotate(snapshot.CDS, snapshot.EDS, snapshot.LDS, snapshot.RDS, snapshot.SDS)
		st = &State{Push: pc, Groups: map[string]*Group{}, upstream: model.UpstreamCredentials(pc)}
		st.Clusters, st.Endpoints, st.serviceErrors = serviceResources(t.intern, "", svc)
	}
	return st
}

// pushScoping is the scoping of a new full push: the mesh config in force
// now, and its rootNamespace unless the options name one (an explicit
// --root-namespace wins).
func (t *Translator) pushScoping() model.Scoping {
	sc := t.scoping
	if t.mesh == nil {
		return sc
	}
	m := t.mesh()
	sc.Mesh = m
	if sc.RootNamespace == "" && m != nil {
		sc.RootNamespace = m.Mesh.GetRootNamespace()
	}
	return sc
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

// buildServices runs the generator, turning a panic into an error.
func (t *Translator) buildServices(pc *model.PushContext) (res core.ServiceResources, err error) {
	t.translations.WithLabelValues("services").Inc()
	defer t.recoverTranslation("service", &err)
	return t.gen.BuildServices(pc), nil
}

// buildEndpoints runs the generator, turning a panic into an error.
func (t *Translator) buildEndpoints(pc *model.PushContext) (res core.EndpointResources, err error) {
	t.translations.WithLabelValues("endpoints").Inc()
	defer t.recoverTranslation("endpoint", &err)
	return t.gen.BuildEndpoints(pc), nil
}

// buildGateway runs the generator, turning a panic into an error.
func (t *Translator) buildGateway(pc *model.PushContext, gws []config.Config, scope model.SecretScope) (res core.GatewayResources, err error) {
	t.translations.WithLabelValues("gateway").Inc()
	defer t.recoverTranslation("gateway", &err)
	return t.gen.BuildGateway(pc, gws, scope), nil
}

// buildProxyless runs the generator, turning a panic into an error.
func (t *Translator) buildProxyless(pc *model.PushContext) (res grpcgen.Resources, err error) {
	t.translations.WithLabelValues("proxyless").Inc()
	defer t.recoverTranslation("proxyless", &err)
	return t.gen.BuildProxyless(pc), nil
}

// recoverTranslation turns a translator panic into *err.
func (t *Translator) recoverTranslation(what string, err *error) {
	if r := recover(); r != nil {
		t.log.Error(what+" translation panicked", "panic", r, "stack", string(debug.Stack()))
		*err = fmt.Errorf("%s translation panicked: %v", what, r)
	}
}
