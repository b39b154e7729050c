package push

import (
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// endpointsPush builds the state of an endpoints-only push from the last
// one: load assignments are rebuilt, everything else (clusters, every
// group's listeners, routes and secrets) is reused as it is, so only EDS
// versions change. It returns nil when a full push is needed instead (the
// translator panicked, or a cluster lost its assignment).
func (t *Translator) endpointsPush(pc *model.PushContext, prev *State, req *model.PushRequest) *State {
	// Only the services the request names, when it names them.
	endpoints, errs, ok := t.partialEndpoints(pc, prev, req)
	if ok {
		t.intern.Trim(snapshot.EDS)
	} else {
		t.intern.Rotate(snapshot.EDS)
		eps, err := t.buildEndpoints(pc)
		if err != nil {
			return nil
		}
		endpoints, errs, ok = endpointResources(t.intern, "", prev.Clusters, eps)
		if !ok {
			t.log.Info("endpoints-only push needs a full push: a cluster has no load assignment")
			return nil
		}
	}
	// The services' translation errors are kept from the last full push;
	// endpoint problems found now replace those of earlier endpoints-only
	// pushes (deduplicated when shown).
	st := &State{Push: pc, Clusters: prev.Clusters, Endpoints: endpoints, EndpointsOnly: true,
		serviceErrors: prev.serviceErrors, endpointErrors: errs, Groups: make(map[string]*Group, len(prev.Groups)), upstream: prev.upstream}
	for key, g := range prev.Groups {
		ng := *g
		if g.Key == ProxylessKey || g.viewKey != "" || g.clusters != nil {
			// Built again on demand, like a new group: its endpoints are
			// rebuilt and the rest reused by the interner (and the route
			// cache, for a view's group). So is a group with clusters of
			// its own (EnvoyFilter CLUSTER patches), whose endpoints are
			// cut to its clusters.
			continue
		}
		if g.View != nil {
			ng.View = snapshot.NewView(st.Clusters, st.Endpoints, g.listeners, g.routes, g.secrets)
		}
		st.Groups[key] = &ng
	}
	return st
}

// maxPartialShare bounds the share of services a partial endpoints push
// may rebuild; past it, rebuilding all costs about the same and is
// simpler.
const maxPartialShare = 4

// partialEndpoints builds the endpoint set of an endpoints-only push from
// prev's by rebuilding the assignments of the services req names alone.
// ok is false when it cannot (no names, a generator without
// core.PartialEndpointsGenerator, a name that is not a current service, a
// translator panic, or a changed set of cluster names, which needs a full
// push): the caller then rebuilds every assignment.
func (t *Translator) partialEndpoints(pc *model.PushContext, prev *State, req *model.PushRequest) (set *snapshot.TypeSet, errs []*config.Error, ok bool) {
	gen, can := t.gen.(core.PartialEndpointsGenerator)
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
	out, err := t.buildEndpointsFor(gen, pc, req.ConfigsUpdated)
	if err != nil {
		return nil, nil, false
	}
	built, perrs := snapshot.Prepare(t.intern, snapshot.EDS, "", out.Endpoints)
	// The assignments of those hosts in prev must be exactly the ones
	// built now: only then is prev's set, with these replaced, what a
	// full rebuild would give.
	byName := make(map[string]*snapshot.Resource, len(built))
	for _, r := range built {
		byName[r.Name] = r
	}
	items := slices.Clone(prev.Endpoints.Items)
	var changed []string
	var at []int
	matched := 0
	for i, r := range items {
		if !hosts[clusterHost(r.Name)] {
			continue
		}
		nr := byName[r.Name]
		if nr == nil {
			return nil, nil, false // an assignment went away
		}
		matched++
		if nr != r {
			items[i] = nr
			changed = append(changed, r.Name) // items are sorted by name
			at = append(at, i)
		}
	}
	if matched != len(built) {
		return nil, nil, false // a new assignment, or one prev's clusters do not name
	}
	set = snapshot.PartialTypeSet(prev.Endpoints, items, at, changed)
	// The sets before prev, with the names changed since each: prev's
	// base and its own older ones, bounded. Then prev forgets them, so
	// only the newest set holds earlier sets. Readers hold mu.
	t.mu.Lock()
	set.TakeAncestors()
	t.mu.Unlock()
	// Problems of the services rebuilt replace theirs; the others' stand.
	for _, e := range prev.endpointErrors {
		if _, ok := req.ConfigsUpdated[e.Key]; !ok {
			errs = append(errs, e)
		}
	}
	t.translations.WithLabelValues("endpoints-partial").Inc()
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
func (t *Translator) buildEndpointsFor(gen core.PartialEndpointsGenerator, pc *model.PushContext, sources map[config.Key]struct{}) (res core.EndpointResources, err error) {
	defer t.recoverTranslation("endpoint", &err)
	return gen.BuildEndpointsFor(pc, sources), nil
}
