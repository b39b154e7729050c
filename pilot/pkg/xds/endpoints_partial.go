package xds

import (
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// PartialEndpointsGenerator is a Generator that can build the load
// assignments of some services alone. With it, an endpoints-only push
// that names the services that changed (PushRequest.ConfigsUpdated, as
// the Kubernetes registry sends) rebuilds and re-encodes their
// assignments only; every other assignment keeps its interned bytes.
type PartialEndpointsGenerator interface {
	// BuildEndpointsFor returns the assignments of the EDS clusters of
	// the services whose Source is in sources, as BuildEndpoints would.
	BuildEndpointsFor(push *model.PushContext, sources map[config.Key]struct{}) EndpointResources
}

var _ PartialEndpointsGenerator = CoreGenerator{}

// BuildEndpointsFor calls endpoint.BuildEndpointsFor.
func (CoreGenerator) BuildEndpointsFor(push *model.PushContext, sources map[config.Key]struct{}) EndpointResources {
	eps, errs := endpoint.BuildEndpointsFor(push, sources)
	return EndpointResources{Endpoints: eps, Errors: errs}
}

// maxPartialShare bounds the share of services a partial endpoints push
// may rebuild; past it, rebuilding all costs about the same and is
// simpler.
const maxPartialShare = 4

// partialEndpoints builds the endpoint set of an endpoints-only push from
// prev's by rebuilding the assignments of the services req names alone.
// ok is false when it cannot (no names, a generator without
// PartialEndpointsGenerator, a name that is not a current service, a
// translator panic, or a changed set of cluster names, which needs a full
// push): the caller then rebuilds every assignment.
func (s *DiscoveryServer) partialEndpoints(pc *model.PushContext, prev *pushState, req *model.PushRequest) (set *typeSet, errs []*config.Error, ok bool) {
	gen, can := s.gen.(PartialEndpointsGenerator)
	if !can || req == nil || len(req.ConfigsUpdated) == 0 {
		return nil, nil, false
	}
	// The hosts of the named services; each name must be one.
	hosts := map[string]bool{}
	found := map[config.Key]bool{}
	for _, svc := range pc.Services() {
		if _, ok := req.ConfigsUpdated[svc.Source]; ok {
			hosts[svc.Hostname] = true
			found[svc.Source] = true
		}
	}
	if len(found) != len(req.ConfigsUpdated) || len(hosts)*maxPartialShare > len(pc.Services()) {
		return nil, nil, false
	}
	out, err := s.buildEndpointsFor(gen, pc, req.ConfigsUpdated)
	if err != nil {
		return nil, nil, false
	}
	built, perrs := prepare(s.intern, edsIdx, "", out.Endpoints)
	// The assignments of those hosts in prev must be exactly the ones
	// built now: only then is prev's set, with these replaced, what a
	// full rebuild would give.
	byName := make(map[string]*res, len(built))
	for _, r := range built {
		byName[r.name] = r
	}
	items := slices.Clone(prev.endpoints.items)
	var changed []string
	var at []int
	matched := 0
	for i, r := range items {
		if !hosts[clusterHost(r.name)] {
			continue
		}
		nr := byName[r.name]
		if nr == nil {
			return nil, nil, false // an assignment went away
		}
		matched++
		if nr != r {
			items[i] = nr
			changed = append(changed, r.name) // items are sorted by name
			at = append(at, i)
		}
	}
	if matched != len(built) {
		return nil, nil, false // a new assignment, or one prev's clusters do not name
	}
	set = partialTypeSet(prev.endpoints, items, at)
	set.base, set.changed = prev.endpoints, changed
	// The sets before prev, with the names changed since each: prev's
	// base and its own older ones, bounded. Then prev forgets them, so
	// only the newest set holds earlier sets (at most maxAncestors).
	// Readers hold mu.
	s.mu.Lock()
	if p := prev.endpoints; p.base != nil {
		set.older = append(set.older, ancestor{set: p.base, changed: unionNames(p.changed, changed)})
		for _, a := range p.older {
			if len(set.older) >= maxAncestors-1 {
				break
			}
			set.older = append(set.older, ancestor{set: a.set, changed: unionNames(a.changed, changed)})
		}
	}
	prev.endpoints.base, prev.endpoints.changed, prev.endpoints.older = nil, nil, nil
	s.mu.Unlock()
	// Problems of the services rebuilt replace theirs; the others' stand.
	for _, e := range prev.endpointErrors {
		if _, ok := req.ConfigsUpdated[e.Key]; !ok {
			errs = append(errs, e)
		}
	}
	s.metrics.translations.WithLabelValues("endpoints-partial").Inc()
	return set, slices.Concat(errs, out.Errors, perrs), true
}

// clusterHost is the host of a cluster named by model.ClusterName.
func clusterHost(name string) string {
	if i := strings.LastIndexByte(name, '|'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// buildEndpointsFor runs the generator, turning a panic into an error.
func (s *DiscoveryServer) buildEndpointsFor(gen PartialEndpointsGenerator, pc *model.PushContext, sources map[config.Key]struct{}) (res EndpointResources, err error) {
	defer s.recoverTranslation("endpoint", &err)
	return gen.BuildEndpointsFor(pc, sources), nil
}

// unionNames returns the sorted names in a or b, both sorted.
func unionNames(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(slices.Concat(a, b))))
}
