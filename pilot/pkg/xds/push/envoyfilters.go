package push

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/envoyfilter"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// groupFilters are the EnvoyFilters of one gateway group and what the
// patches read of its proxies.
type groupFilters struct {
	filters []envoyfilter.Filter
	proxy   envoyfilter.Proxy
	// sources are the filters' sources, for their problems.
	sources map[config.Key]string
	// specs are the filters' spec hashes (withholding holds per spec).
	specs map[filterName]string
}

// EnvoyFilterReport is what a group's EnvoyFilter patches did: per patch,
// matches, changes and failures, and which patches touched each resource
// (so that a NACK of that resource is attributed to them).
type EnvoyFilterReport struct {
	Filters []config.Key
	Patches []envoyfilter.PatchReport
	Touched map[envoyfilter.ResourceRef][]envoyfilter.PatchRef
	// specs are the filters' spec hashes when the report was made.
	specs map[filterName]string
}

// withholding is the (patch, resource) pairs a proxy rejected: the next
// translations leave them out, so the gateway converges on the resource as
// translated. Process-wide, since a NACKed patch is as bad for every group.
// Each pair holds while its EnvoyFilter's spec is the one rejected: an
// edited filter is tried again.
type withholding struct {
	mu  sync.Mutex
	set map[envoyfilter.Withheld]string // -> the filter's spec hash
}

// snapshot is the pairs that hold for filters of the given spec hashes.
func (w *withholding) snapshot(specs map[filterName]string) map[envoyfilter.Withheld]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out map[envoyfilter.Withheld]bool
	for p, h := range w.set {
		if specs[filterName{p.Patch.Namespace, p.Patch.Name}] == h {
			if out == nil {
				out = map[envoyfilter.Withheld]bool{}
			}
			out[p] = true
		}
	}
	return out
}

// add records pairs (with their filters' spec hashes) and reports whether
// any is new. Pairs of an older spec of the same filter are dropped.
func (w *withholding) add(pairs []envoyfilter.Withheld, specs map[filterName]string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set == nil {
		w.set = map[envoyfilter.Withheld]string{}
	}
	added := false
	for _, p := range pairs {
		h := specs[filterName{p.Patch.Namespace, p.Patch.Name}]
		if w.set[p] != h {
			w.set[p] = h
			added = true
		}
	}
	for p, h := range w.set {
		if cur, ok := specs[filterName{p.Patch.Namespace, p.Patch.Name}]; ok && cur != h {
			delete(w.set, p)
		}
	}
	return added
}

// filterName is an EnvoyFilter's namespace and name.
type filterName struct{ namespace, name string }

// efSelection is the EnvoyFilters that apply to the proxies of one
// namespace and set of labels in a push, worked out once for all of them.
type efSelection struct {
	filters []envoyfilter.Filter
	specs   map[filterName]string
	// names are the filters' names for the group key; proxyMatch is set
	// when a patch matches on the proxy's version or metadata.
	names      string
	proxyMatch bool
}

// efPush is a push's EnvoyFilters read once: the filters, their sources,
// and the selections made so far by proxy namespace and labels.
type efPush struct {
	filters    []envoyfilter.Filter
	sources    map[config.Key]string
	selections map[string]*efSelection
}

// withEnvoyFilters extends key with the EnvoyFilters that apply to p
// (istiod's EnvoyFilters(proxy): root namespace ones, then p's namespace's
// by workloadSelector or targetRefs) and what their patches read of p.
// Nil filters when none applies. The selection is made once per push for
// each namespace and set of labels, not per proxy.
func (t *Translator) withEnvoyFilters(st *State, push *model.PushContext, p *model.Proxy, key string) (string, *groupFilters) {
	if len(push.EnvoyFilters()) == 0 {
		return key, nil
	}
	if st.ef == nil {
		ep := &efPush{filters: envoyfilter.FromConfigs(push.EnvoyFilters()), sources: map[config.Key]string{}, selections: map[string]*efSelection{}}
		for _, c := range push.EnvoyFilters() {
			ep.sources[c.Key()] = c.Source
		}
		st.ef = ep
	}
	in := selectionKey(p)
	sel, ok := st.ef.selections[in]
	if !ok {
		sel = selectEnvoyFilters(st.ef.filters, push.RootNamespace(), p)
		st.ef.selections[in] = sel
	}
	if sel == nil {
		return key, nil
	}
	gf := &groupFilters{filters: sel.filters, sources: st.ef.sources, specs: sel.specs}
	ident := sel.names
	// Patches that match on the proxy's version or metadata make those
	// part of what the group's output depends on; otherwise proxies of
	// any version share it.
	if sel.proxyMatch {
		gf.proxy = envoyfilter.Proxy{Version: p.IstioVersion, Metadata: proxyMetadata(p)}
		var b strings.Builder
		b.WriteString(ident + "|" + strconv.Quote(gf.proxy.Version))
		for _, k := range slices.Sorted(maps.Keys(gf.proxy.Metadata)) {
			b.WriteString(strconv.Quote(k) + "=" + strconv.Quote(gf.proxy.Metadata[k]))
		}
		ident = b.String()
	}
	h := protoconv.NewHasher()
	h.String(ident)
	return key + "/envoyfilter/" + h.Sum(), gf
}

// selectionKey names what envoyfilter.Select reads of p.
func selectionKey(p *model.Proxy) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(p.Namespace))
	writeLabels(&b, p.Labels)
	return b.String()
}

// selectEnvoyFilters is the selection for p's namespace and labels, with
// the filters' spec hashes (withholding holds per spec); nil when none
// applies.
func selectEnvoyFilters(filters []envoyfilter.Filter, root string, p *model.Proxy) *efSelection {
	selected := envoyfilter.Select(filters, root, policyattach.Proxy{Namespace: p.Namespace, Labels: p.Labels})
	if len(selected) == 0 {
		return nil
	}
	sel := &efSelection{filters: selected, specs: map[filterName]string{}}
	var b strings.Builder
	for _, f := range selected {
		h := protoconv.NewHasher()
		h.Message(f.Spec)
		sel.specs[filterName{f.Namespace, f.Name}] = h.Sum()
		b.WriteString(strconv.Quote(f.Namespace + "/" + f.Name))
		for _, cp := range f.Spec.GetConfigPatches() {
			if cp.GetMatch().GetProxy() != nil {
				sel.proxyMatch = true
			}
		}
	}
	sel.names = b.String()
	return sel
}

// proxyMetadata is the node metadata patches can match on: the fields
// Wayfinder reads of a node (it keeps no other metadata of a client).
func proxyMetadata(p *model.Proxy) map[string]string {
	md := map[string]string{"NAMESPACE": p.Namespace}
	for k, v := range map[string]string{"CLUSTER_ID": p.ClusterID, "MESH_ID": p.MeshID, "ISTIO_VERSION": p.IstioVersion, "GENERATOR": p.Generator} {
		if v != "" {
			md[k] = v
		}
	}
	return md
}

// applyEnvoyFilters patches a group's translated resources. Listeners and
// routes are the group's own; clusters are the push's shared ones unless
// a patch applies to clusters, and then the group gets patched copies
// (clusters returned non-nil).
func (t *Translator) applyEnvoyFilters(st *State, gf *groupFilters, res *core.GatewayResources, shared *snapshot.TypeSet) (clusters []*clusterv3.Cluster, report *EnvoyFilterReport, errs []*config.Error) {
	in := envoyfilter.Input{
		Filters:             gf.filters,
		Proxy:               gf.proxy,
		Listeners:           res.Listeners,
		RouteConfigurations: res.Routes,
		Withhold:            t.withheld.snapshot(gf.specs),
		Values:              st.envoyFilterValues(),
	}
	if patchesClusters(gf.filters) && shared != nil {
		in.Clusters = make([]*clusterv3.Cluster, 0, len(shared.Items))
		for _, r := range shared.Items {
			c := &clusterv3.Cluster{}
			if err := r.Any.UnmarshalTo(c); err == nil {
				in.Clusters = append(in.Clusters, c)
			}
		}
	}
	out := envoyfilter.Apply(in)
	res.Listeners, res.Routes = out.Listeners, out.RouteConfigurations
	if in.Clusters != nil {
		clusters = out.Clusters
	}
	report = &EnvoyFilterReport{Patches: out.Patches, Touched: out.Touched, specs: gf.specs}
	for _, f := range gf.filters {
		report.Filters = append(report.Filters, config.Key{Kind: schema.EnvoyFilter, Namespace: f.Namespace, Name: f.Name})
	}
	for _, e := range out.Errors {
		if e.Source == "" {
			cp := *e
			cp.Source = gf.sources[e.Key]
			e = &cp
		}
		errs = append(errs, e)
	}
	return clusters, report, errs
}

func patchesClusters(filters []envoyfilter.Filter) bool {
	for _, f := range filters {
		for _, cp := range f.Spec.GetConfigPatches() {
			if cp.GetApplyTo() == networking.EnvoyFilter_CLUSTER {
				return true
			}
		}
	}
	return false
}

// touched are the (patch, resource) pairs of g's resources of typeURL
// that EnvoyFilter patches changed, sorted.
func touched(g *Group, typeURL string) []envoyfilter.Withheld {
	if g == nil || g.EnvoyFilters == nil {
		return nil
	}
	var rt envoyfilter.ResourceType
	switch typeURL {
	case snapshot.Types[snapshot.LDS]:
		rt = envoyfilter.Listener
	case snapshot.Types[snapshot.RDS]:
		rt = envoyfilter.RouteConfiguration
	case snapshot.Types[snapshot.CDS]:
		rt = envoyfilter.Cluster
	default:
		return nil
	}
	var pairs []envoyfilter.Withheld
	for ref, patches := range g.EnvoyFilters.Touched {
		if ref.Type != rt {
			continue
		}
		for _, p := range patches {
			pairs = append(pairs, envoyfilter.Withheld{Patch: p, Resource: ref})
		}
	}
	slices.SortFunc(pairs, func(a, b envoyfilter.Withheld) int {
		return strings.Compare(a.Patch.String()+a.Resource.String(), b.Patch.String()+b.Resource.String())
	})
	return pairs
}

// maxTouchedShown bounds the patches a rejection's record names.
const maxTouchedShown = 10

// TouchedPatches names the EnvoyFilter patches that changed g's resources
// of typeURL ("EnvoyFilter ns/name spec.configPatches[i] on Listener X"),
// for a rejection's record: at most maxTouchedShown, then how many more.
func TouchedPatches(g *Group, typeURL string) []string {
	pairs := touched(g, typeURL)
	var out []string
	for i, p := range pairs {
		if i == maxTouchedShown {
			out = append(out, fmt.Sprintf("and %d more", len(pairs)-i))
			break
		}
		out = append(out, p.Patch.String()+" on "+p.Resource.String())
	}
	return out
}

// WithholdRejected records that a proxy of g rejected its resources of
// typeURL: every patch that touched one of them is withheld from it from
// the next translation on. It reports whether anything new is withheld
// (and a push should follow).
func (t *Translator) WithholdRejected(g *Group, typeURL string) bool {
	pairs := touched(g, typeURL)
	if len(pairs) == 0 {
		return false
	}
	t.log.Warn("a gateway rejected resources EnvoyFilter patches changed; those patches are withheld from them from the next push on",
		"group", g.Key, "type", snapshot.ShortType(typeURL), "patches", len(pairs))
	return t.withheld.add(pairs, g.EnvoyFilters.specs)
}
