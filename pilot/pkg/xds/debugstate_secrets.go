package xds

import (
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
)

// secretRefusals lists the refusals of the last push's groups that have
// proxies, by group key. The caller must not hold mu.
func (s *DiscoveryServer) secretRefusals() []debugapi.SecretRefusalz {
	s.mu.Lock()
	defer s.mu.Unlock()
	byGroup := map[*push.Group][]string{}
	for id, p := range s.proxies {
		if p.group != nil && len(p.group.Refused) > 0 {
			byGroup[p.group] = append(byGroup[p.group], id)
		}
	}
	out := []debugapi.SecretRefusalz{}
	for g, ids := range byGroup {
		slices.Sort(ids)
		out = append(out, debugapi.SecretRefusalz{Group: g.Key, Scope: g.Scope, Proxies: ids, Refused: g.Refused})
	}
	slices.SortFunc(out, func(a, b debugapi.SecretRefusalz) int { return strings.Compare(a.Group, b.Group) })
	return out
}
