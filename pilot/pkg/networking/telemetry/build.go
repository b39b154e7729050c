package telemetry

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// builder holds one Build's inputs and what it has collected.
type builder struct {
	in       Input
	cfg      *mesh.Config
	mesh     *meshconfig.MeshConfig
	services ServiceNamespaces
	clusters map[string]ProviderCluster
	problems []problem
}

// Build computes the access logging and tracing of one gateway proxy, as
// istiod 1.29 configures them on a gateway's listeners (listener class
// gateway, workload mode CLIENT, no service). It never fails: what cannot
// be built is left out and named in Result.Problems.
func Build(in Input) Result {
	cfg := in.Mesh
	if cfg == nil {
		cfg = mesh.Default()
	}
	b := &builder{in: in, cfg: cfg, mesh: cfg.Mesh, services: in.Services, clusters: map[string]ProviderCluster{}}
	root := in.RootNamespace
	if root == "" {
		root = b.mesh.GetRootNamespace()
	}
	var telemetries []Telemetry
	for _, t := range in.Telemetries {
		if t.Spec != nil {
			telemetries = append(telemetries, t)
		}
	}
	app := applicableTelemetries(sortByCreation(telemetries), root, in.Proxy)

	var r Result
	r.Decision = Decision{Root: app.root, Namespace: app.namespace, Workload: app.workload}
	b.accessLogs(&r, app)

	spec := mergeTracing(app.tracing, b.mesh)
	if spec == nil {
		r.Decision.MeshTracing = true
	} else {
		if spec.provider == nil && spec.providerName != "" {
			b.providerProblem(spec.providerName, "tracing provider %q is not in the mesh config", spec.providerName)
		} else if spec.provider != nil && !b.usable(spec.provider) {
			spec.provider, spec.disabled = nil, true
		}
		r.Decision.Tracing = tracingDecision(spec)
	}
	r.Tracing, r.RequestIDExtension = b.configureTracing(spec)

	for _, name := range slices.Sorted(maps.Keys(b.clusters)) {
		r.Clusters = append(r.Clusters, b.clusters[name])
	}
	r.Problems = b.attribute(app.applied)
	return r
}

// accessLogs follows istiod's Telemetries.AccessLogging and the
// AccessLogBuilder's set*AccessLog for a gateway: the merged providers'
// loggers sorted by provider name, or, when there are none (no Telemetry
// or default provider configures logging, or none of the providers named
// exists), the mesh config's fallback.
func (b *builder) accessLogs(r *Result, app applicable) {
	var cfgs []loggingConfig
	if len(app.logging) != 0 || len(b.mesh.GetDefaultProviders().GetAccessLogging()) != 0 {
		merged := mergeLogs(app.logging, b.mesh, gatewayMode)
		for _, name := range slices.Sorted(maps.Keys(merged)) {
			spec := merged[name]
			p := fetchProvider(b.mesh, name)
			if p == nil {
				b.providerProblem(name, "access log provider %q is not in the mesh config", name)
				continue
			}
			if !b.usable(p) {
				continue
			}
			// istiod builds a disabled provider's logger too: one whose
			// service does not resolve is dropped, which can leave no
			// provider and so the mesh config's fallback. Its cluster is
			// not needed, though.
			saved := maps.Clone(b.clusters)
			al := b.accessLogFor(p)
			if spec.disabled {
				b.clusters = saved
			}
			if al == nil {
				continue
			}
			c := loggingConfig{provider: p.GetName(), disabled: spec.disabled, log: al}
			if spec.filter != nil {
				expr := spec.filter.GetExpression()
				c.filter = &expr
			}
			cfgs = append(cfgs, c)
		}
		// istiod sorts by the provider's own name (names differing only in
		// case can map to one provider); stable keeps the merge order.
		slices.SortStableFunc(cfgs, func(x, y loggingConfig) int { return strings.Compare(x.provider, y.provider) })
	}
	if len(cfgs) == 0 {
		r.Decision.MeshAccessLog = true
		b.meshAccessLogs(r)
		return
	}
	for _, c := range cfgs {
		r.Decision.AccessLogs = append(r.Decision.AccessLogs, AccessLogDecision{Provider: c.provider, Disabled: c.disabled, Filter: c.filter})
	}
	r.HTTPAccessLogs = b.telemetryAccessLogs(cfgs, nil)
	r.TCPAccessLogs = b.telemetryAccessLogs(cfgs, nil)
	if !b.mesh.GetDisableEnvoyListenerLog() {
		r.ListenerAccessLogs = b.telemetryAccessLogs(cfgs, listenerFilter())
	}
}

// usable reports whether the mesh config kept p valid; istiod only warns
// about an invalid provider and would build it anyway.
func (b *builder) usable(p *meshconfig.MeshConfig_ExtensionProvider) bool {
	if _, err := b.cfg.Provider(p.GetName()); err != nil {
		b.providerProblem(p.GetName(), "%v", err)
		return false
	}
	return true
}

// proxyConfig is the proxy's effective ProxyConfig (istiod's
// ProxyConfigOrDefault).
func (b *builder) proxyConfig() *meshconfig.ProxyConfig {
	if b.in.Proxy.ProxyConfig != nil {
		return b.in.Proxy.ProxyConfig
	}
	return b.mesh.GetDefaultConfig()
}

func tracingDecision(s *tracingSpec) *TracingDecision {
	d := &TracingDecision{
		Provider:                     s.providerName,
		Disabled:                     s.disabled,
		RandomSamplingPercentage:     s.randomSamplingPercentage,
		UseRequestIDForTraceSampling: s.useRequestIDForTraceSampling,
		EnableIstioTags:              s.enableIstioTags,
	}
	if s.provider != nil {
		d.Provider = s.provider.GetName()
	}
	if len(s.customTags) > 0 {
		d.CustomTags = map[string]string{}
		for name, t := range s.customTags {
			d.CustomTags[name] = describeTag(t)
		}
	}
	return d
}

// describeTag writes a custom tag as the debug view shows it.
func describeTag(t *telemetryv1.Tracing_CustomTag) string {
	withDefault := func(kind, name, def string) string {
		if def == "" {
			return kind + ":" + name
		}
		return kind + ":" + name + " (default " + strconv.Quote(def) + ")"
	}
	switch {
	case t.GetLiteral() != nil:
		return "literal:" + t.GetLiteral().GetValue()
	case t.GetHeader() != nil:
		return withDefault("header", t.GetHeader().GetName(), t.GetHeader().GetDefaultValue())
	case t.GetEnvironment() != nil:
		return withDefault("environment", t.GetEnvironment().GetName(), t.GetEnvironment().GetDefaultValue())
	case t.GetFormatter() != nil:
		return "formatter:" + t.GetFormatter().GetValue()
	}
	return "none"
}
