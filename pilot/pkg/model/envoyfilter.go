package model

import (
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// EnvoyFilters returns every valid networking.istio.io EnvoyFilter (a store
// holds valid objects only) in the order istiod 1.29 applies them
// (PushContext.initEnvoyFilters): by spec.priority, lowest first; then by
// creation time, oldest first; then by "name.namespace", which is unique,
// so the order never depends on the store's. The spec is a
// *networking/v1alpha3.EnvoyFilter, shared: read only. Which gateways a
// filter applies to (root namespace, own namespace, workloadSelector,
// targetRefs) is the patcher's to decide; this is every filter of the push.
// A change to one is a full push.
func (ps *PushContext) EnvoyFilters() []config.Config { return ps.envoyFilters }

// sortEnvoyFilters sorts cs (a list the caller owns) in istiod's order and
// returns it.
func sortEnvoyFilters(cs []config.Config) []config.Config {
	slices.SortStableFunc(cs, func(a, b config.Config) int {
		if pa, pb := envoyFilterPriority(a), envoyFilterPriority(b); pa != pb {
			if pa < pb {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
			return c
		}
		return strings.Compare(a.Name+"."+a.Namespace, b.Name+"."+b.Namespace)
	})
	return cs
}

func envoyFilterPriority(c config.Config) int32 {
	if ef, ok := c.Spec.(*networking.EnvoyFilter); ok {
		return ef.GetPriority()
	}
	return 0
}
