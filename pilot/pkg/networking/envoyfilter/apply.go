package envoyfilter

import (
	"cmp"
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Apply runs in.Filters' patches over in's resources (see the package
// doc). It never fails as a whole: a patch that cannot be built, or whose
// result does not validate on a resource, is reported and left out.
func Apply(in Input) Result {
	var res Result
	patches, errs := compile(in.Filters, in.Proxy, in.Values, &res.Patches)
	res.Errors = errs
	a := &applier{in: in, res: &res, touched: map[ResourceRef][]PatchRef{}}

	res.Listeners = a.listeners(patches)
	res.RouteConfigurations = a.routeConfigurations(patches)
	res.Clusters = a.clusters(patches)

	res.Touched = a.touched
	for _, p := range patches {
		r := p.report
		if r.Matched == 0 && len(r.Failures) == 0 && len(r.Withheld) == 0 {
			res.Errors = append(res.Errors, &config.Error{Key: p.key, Field: field(p.ref.Index, ""), Warning: true,
				Message: fmt.Sprintf("%s %s matched nothing on this gateway", r.ApplyTo, r.Operation)})
		}
		for _, f := range r.Failures {
			res.Errors = append(res.Errors, &config.Error{Key: p.key, Field: field(p.ref.Index, ".patch.value"),
				Message: fmt.Sprintf("not applied to %s: %s", f.Resource, f.Error)})
		}
	}
	return res
}

type applier struct {
	in      Input
	res     *Result
	touched map[ResourceRef][]PatchRef
}

// step runs one patch over one resource: on a clone, kept only if it
// validates. fn changes the clone and says whether the patch matched and
// whether the resource is to be removed. It returns the resource to carry
// on with (nil: removed).
func step[T proto.Message](a *applier, p *patch, ref ResourceRef, cur T, fn func(T) (matched, removed bool, err error)) (T, bool) {
	var zero T
	if a.in.Withhold[Withheld{Patch: p.ref, Resource: ref}] {
		p.report.Withheld = append(p.report.Withheld, ref)
		return cur, false
	}
	next := proto.Clone(cur).(T)
	matched, removed, err := guarded(func() (bool, bool, error) { return fn(next) })
	if !matched {
		return cur, false
	}
	p.report.Matched++
	if err == nil && !removed {
		if proto.Equal(next, cur) {
			return cur, false
		}
		err = validate(next)
	}
	if err != nil {
		p.report.Failures = append(p.report.Failures, Failure{Resource: ref, Error: err.Error()})
		return cur, false
	}
	p.report.Changed++
	a.touched[ref] = append(a.touched[ref], p.ref)
	if removed {
		return zero, true
	}
	return next, false
}

// phased returns the patches with a phase >= 0, stably ordered by phase.
func phased(patches []*patch, phase func(*patch) int) []*patch {
	var out []*patch
	for _, p := range patches {
		if phase(p) >= 0 {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(x, y *patch) int { return cmp.Compare(phase(x), phase(y)) })
	return out
}

func (a *applier) listeners(patches []*patch) []*listenerv3.Listener {
	ps := phased(patches, listenerPhase)
	out := make([]*listenerv3.Listener, 0, len(a.in.Listeners))
	for _, l := range a.in.Listeners {
		ref := ResourceRef{Type: Listener, Name: l.GetName()}
		cur := l
		removed := false
		for _, p := range ps {
			cur, removed = step(a, p, ref, cur, func(c *listenerv3.Listener) (bool, bool, error) { return patchListener(p, c) })
			if removed {
				break
			}
		}
		if !removed {
			out = append(out, cur)
		}
	}
	// Listener ADDs: istiod appends them after patching the rest.
	for _, p := range patches {
		if p.applyTo == networking.EnvoyFilter_LISTENER && p.operation == networking.EnvoyFilter_Patch_ADD {
			v := p.value.(*listenerv3.Listener)
			out = add(a, p, ResourceRef{Type: Listener, Name: v.GetName()}, out, v,
				func(l *listenerv3.Listener) string { return l.GetName() })
		}
	}
	return out
}

func (a *applier) routeConfigurations(patches []*patch) []*routev3.RouteConfiguration {
	ps := phased(patches, routePhase)
	out := make([]*routev3.RouteConfiguration, 0, len(a.in.RouteConfigurations))
	for _, rc := range a.in.RouteConfigurations {
		ref := ResourceRef{Type: RouteConfiguration, Name: rc.GetName()}
		cur := rc
		for _, p := range ps {
			if next, ok := a.stepVirtualHosts(p, ref, cur); ok {
				cur = next
				continue
			}
			cur, _ = step(a, p, ref, cur, func(c *routev3.RouteConfiguration) (bool, bool, error) {
				return patchRouteConfiguration(p, c, a.in.PortMap), false, nil
			})
		}
		out = append(out, cur)
	}
	return out
}

func (a *applier) clusters(patches []*patch) []*clusterv3.Cluster {
	var ps []*patch
	for _, p := range patches {
		if p.applyTo == networking.EnvoyFilter_CLUSTER &&
			(p.operation == networking.EnvoyFilter_Patch_MERGE || p.operation == networking.EnvoyFilter_Patch_REMOVE) {
			ps = append(ps, p)
		}
	}
	out := make([]*clusterv3.Cluster, 0, len(a.in.Clusters))
	for _, c := range a.in.Clusters {
		ref := ResourceRef{Type: Cluster, Name: c.GetName()}
		cur := c
		removed := false
		for _, p := range ps {
			if !clusterMatch(cur, p) && !a.in.Withhold[Withheld{Patch: p.ref, Resource: ref}] {
				continue // no copy of a cluster the patch does not match
			}
			cur, removed = step(a, p, ref, cur, func(c *clusterv3.Cluster) (bool, bool, error) { return patchCluster(p, c) })
			if removed {
				break
			}
		}
		if !removed {
			out = append(out, cur)
		}
	}
	for _, p := range patches {
		if p.applyTo == networking.EnvoyFilter_CLUSTER && p.operation == networking.EnvoyFilter_Patch_ADD {
			v := p.value.(*clusterv3.Cluster)
			out = add(a, p, ResourceRef{Type: Cluster, Name: v.GetName()}, out, v,
				func(c *clusterv3.Cluster) string { return c.GetName() })
		}
	}
	return out
}

// add is a LISTENER or CLUSTER ADD: the value, if it validates and its
// name is not taken (Envoy rejects the whole update for a duplicate).
func add[T proto.Message](a *applier, p *patch, ref ResourceRef, out []T, v T, name func(T) string) []T {
	if a.in.Withhold[Withheld{Patch: p.ref, Resource: ref}] {
		p.report.Withheld = append(p.report.Withheld, ref)
		return out
	}
	p.report.Matched++
	var err error
	if slices.ContainsFunc(out, func(e T) bool { return name(e) == ref.Name }) {
		err = fmt.Errorf("name %q is already taken", ref.Name)
	} else {
		err = validate(v)
	}
	if err != nil {
		p.report.Failures = append(p.report.Failures, Failure{Resource: ref, Error: err.Error()})
		return out
	}
	p.report.Changed++
	a.touched[ref] = append(a.touched[ref], p.ref)
	return append(out, proto.Clone(v).(T))
}

// guarded runs fn, turning a panic into an error: istiod recovers from a
// patch that panics too (and drops every patch of the resource type); here
// only this patch on this resource is lost.
func guarded(fn func() (bool, bool, error)) (matched, removed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			matched, removed, err = true, false, fmt.Errorf("patch failed: %v", r)
		}
	}()
	return fn()
}
