package analysis

import (
	"fmt"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/envoyfilter"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// patchTally gathers what EnvoyFilter patches did over every gateway
// configuration analyzed, so that a patch is reported as matching nothing
// only when it matched nothing anywhere (the server says it per gateway).
type patchTally struct {
	filters  []envoyfilter.Filter
	values   *envoyfilter.Values
	matched  map[envoyfilter.PatchRef]int
	ran      map[envoyfilter.PatchRef]envoyfilter.PatchReport
	problems []*config.Error
}

func newPatchTally(push *model.PushContext) *patchTally {
	return &patchTally{filters: envoyfilter.FromConfigs(push.EnvoyFilters()), values: envoyfilter.NewValues(),
		matched: map[envoyfilter.PatchRef]int{}, ran: map[envoyfilter.PatchRef]envoyfilter.PatchReport{}}
}

// apply patches one gateway configuration (the group's listeners and
// routes, the push's clusters) as the server would for a proxy of
// namespace ns carrying labels.
func (t *patchTally) apply(push *model.PushContext, ns string, labels map[string]string, res core.GatewayResources, services core.ServiceResources) {
	if len(t.filters) == 0 {
		return
	}
	selected := envoyfilter.Select(t.filters, push.RootNamespace(), policyattach.Proxy{Namespace: ns, Labels: labels})
	if len(selected) == 0 {
		return
	}
	out := envoyfilter.Apply(envoyfilter.Input{Filters: selected, Listeners: res.Listeners, RouteConfigurations: res.Routes,
		Clusters: services.Clusters, Values: t.values})
	for _, r := range out.Patches {
		t.matched[r.Patch] += r.Matched
		if _, ok := t.ran[r.Patch]; !ok || r.Skipped == "" {
			t.ran[r.Patch] = r
		}
	}
	for _, e := range out.Errors {
		if e.Warning && strings.Contains(e.Message, "matched nothing") {
			continue // decided over all configurations, in findings
		}
		t.problems = append(t.problems, e)
	}
}

// findings are the patches' problems, and a warning for each patch that
// ran and matched nothing on any gateway configuration.
func (t *patchTally) findings() []*config.Error {
	out := t.problems
	for ref, r := range t.ran {
		if t.matched[ref] == 0 && r.Skipped == "" {
			out = append(out, &config.Error{Key: config.Key{Kind: schema.EnvoyFilter, Namespace: ref.Namespace, Name: ref.Name},
				Field: fmt.Sprintf("spec.configPatches[%d]", ref.Index), Warning: true,
				Message: fmt.Sprintf("%s %s matches nothing on any gateway: it changes nothing (a renamed filter or listener after an upgrade?)", r.ApplyTo, r.Operation)})
		}
	}
	return out
}
