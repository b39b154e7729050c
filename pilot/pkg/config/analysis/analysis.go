// Package analysis finds every problem the control plane would report for a
// set of config objects, without a running server: validation errors,
// cross-object conflicts (Gateways that do not exist, hosts defined twice),
// and what translation warns about (routes that can never match, hosts
// bound by two VirtualServices on one gateway port, destinations and
// subsets that do not exist). It runs the same push context and
// translators as the server, once per distinct gateway selector, so its
// findings are the server's.
package analysis

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/telemetry"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Options tune Analyze.
type Options struct {
	// Proxyless adds what proxyless gRPC clients would be refused (the
	// server translates for them only once one connects).
	Proxyless bool
	// Registries add services besides the ServiceEntries in the configs
	// (Kubernetes Services).
	Registries []model.ServiceDiscovery
	// DomainSuffix is the cluster domain short hosts are completed with,
	// as the server's --domain-suffix; empty means model.DefaultDomainSuffix.
	DomainSuffix string
	// Mesh is the mesh config, as the server's --mesh-config; nil means
	// istiod's defaults (whose only access log provider is envoy).
	Mesh *mesh.Config
	// GatewayAPI are Gateway API objects (LoadAll's), converted as the
	// server converts them and analyzed with the rest.
	GatewayAPI []manifest.GatewayAPIObject
}

// Analyze returns the problems of configs (objects that passed parsing and
// validation) together with sourceErrs (those that did not), deduplicated
// and sorted by source, object and field.
func Analyze(configs []config.Config, sourceErrs []*config.Error, opts Options) []*config.Error {
	generated, convErrs := convertGatewayAPI(opts.GatewayAPI, configs, cmp.Or(opts.DomainSuffix, model.DefaultDomainSuffix))
	configs = append(slices.Clip(configs), generated...)
	sourceErrs = append(slices.Clip(sourceErrs), convErrs...)
	store := memory.New(configs)
	scoping := model.Scoping{DomainSuffix: opts.DomainSuffix, Mesh: opts.Mesh}
	if opts.Mesh != nil {
		// The mesh config's root namespace, as the server takes it when
		// --root-namespace is not given.
		scoping.RootNamespace = opts.Mesh.Mesh.GetRootNamespace()
	}
	push := model.NewScopedPushContext(scoping, store, opts.Registries...)
	gen := core.DefaultGenerator{}
	all := slices.Clone(sourceErrs)
	all = append(all, push.Errors...)
	services := gen.BuildServices(push)
	all = append(all, services.Errors...)
	patches := newPatchTally(push)
	all = append(all, gen.BuildEndpoints(push).Errors...)
	for _, group := range gatewayGroups(push) {
		// As a gateway proxy of the Gateway's namespace would be served:
		// its credentialNames resolve there (analysis reads no Secrets).
		scope := model.SecretScope{Identity: &model.Identity{Namespace: group.namespace, ServiceAccount: "analysis"}}
		// With the telemetry of a proxy carrying the Gateway's labels,
		// so that the Telemetries selecting it are translated too.
		proxy := &model.Proxy{Type: model.Router, Namespace: group.namespace, Labels: group.labels}
		gp := push.WithGatewayTelemetry(telemetry.ForProxy(push, proxy).Gateway())
		res := gen.BuildGateway(gp, group.gateways, scope)
		all = append(all, res.Errors...)
		patches.apply(push, group.namespace, group.labels, res, services)
	}
	all = append(all, patches.findings()...)
	all = append(all, telemetryTargets(push)...)
	all = append(all, securityFindings(push)...)
	if opts.Proxyless {
		all = append(all, gen.BuildProxyless(push).Errors...)
	}

	// Errors that name only their object get its source, so that every
	// finding can be located in a file.
	sources := map[config.Key]string{}
	for _, c := range configs {
		sources[c.Key()] = c.Source
	}
	seen := map[string]bool{}
	var out []*config.Error
	for _, e := range all {
		if e.Source == "" && e.Key.Kind != 0 {
			cp := *e
			cp.Source = sources[e.Key]
			e = &cp
		}
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, compareErrors)
	return out
}

func compareErrors(a, b *config.Error) int {
	fa, da := manifest.SplitDocumentSource(a.Source)
	fb, db := manifest.SplitDocumentSource(b.Source)
	return cmp.Or(strings.Compare(fa, fb), cmp.Compare(da, db),
		strings.Compare(a.Key.String(), b.Key.String()), strings.Compare(a.Field, b.Field))
}

// gatewayGroup is a set of Gateways that select one proxy, and the
// namespace of that proxy.
type gatewayGroup struct {
	gateways  []config.Config
	namespace string
	labels    map[string]string
}

// gatewayGroups returns the distinct sets of Gateways that select one
// proxy. A proxy carrying exactly a Gateway's selector labels, in the
// Gateway's namespace, is selected by that Gateway and by every Gateway
// whose selector is a subset of them: each such set is translated once,
// as the server does per group.
func gatewayGroups(push *model.PushContext) []gatewayGroup {
	groups := map[string]gatewayGroup{}
	for _, gw := range push.Gateways() {
		labels := gw.Spec.(*networking.Gateway).GetSelector()
		set := push.GatewaysForProxy(&model.Proxy{Type: model.Router, Namespace: gw.Namespace, Labels: labels})
		key := model.GatewayGroupKey(set) + "/" + gw.Namespace
		groups[key] = gatewayGroup{gateways: set, namespace: gw.Namespace, labels: labels}
	}
	out := make([]gatewayGroup, 0, len(groups))
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		out = append(out, groups[k])
	}
	return out
}

// kindName is a finding's kind for output, empty when unknown.
func kindName(k schema.Kind) string {
	if k == 0 {
		return ""
	}
	return k.String()
}
