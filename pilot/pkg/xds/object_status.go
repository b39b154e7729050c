package xds

import (
	"maps"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Types an object kind feeds.
var (
	routingTypes = []string{snapshot.Types[snapshot.LDS], snapshot.Types[snapshot.RDS]}
	serviceTypes = []string{snapshot.Types[snapshot.CDS], snapshot.Types[snapshot.EDS]}
)

// ObjectStatus returns the state of every object that a connected gateway
// uses or that has a config problem. It reads the last push and the
// protocol state under the server's lock; nothing is translated.
func (s *DiscoveryServer) ObjectStatus() map[config.Key]*model.ObjectState {
	src, tr := s.currentErrors()
	out := map[config.Key]*model.ObjectState{}
	get := func(k config.Key) *model.ObjectState {
		o := out[k]
		if o == nil {
			o = &model.ObjectState{}
			out[k] = o
		}
		return o
	}
	for _, e := range slices.Concat(src, tr) {
		if e.Key.Kind != 0 {
			o := get(e.Key)
			o.Errors = append(o.Errors, e)
		}
	}

	var shared []config.Key // DestinationRules and ServiceEntries
	for _, kind := range []schema.Kind{schema.DestinationRule, schema.ServiceEntry} {
		for _, c := range s.store.List(kind, "") {
			shared = append(shared, c.Key())
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	byGroup := map[string][]config.Key{} // the Gateways and VirtualServices feeding a group's LDS and RDS
	patched := map[string]bool{}         // groups whose EnvoyFilter reports are counted
	for _, id := range slices.Sorted(maps.Keys(s.proxies)) {
		p := s.proxies[id]
		if p.group == nil || p.view == nil || p.group.Key == push.ProxylessKey || st == nil {
			continue
		}
		newest := newestStream(p)
		if newest == nil {
			continue
		}
		routing, ok := byGroup[p.group.Key]
		if !ok { // once per group, not per proxy
			for _, gw := range p.group.Gateways {
				routing = append(routing, gw)
				for _, vs := range st.Push.VirtualServicesBoundTo(gw.Namespace + "/" + gw.Name) {
					routing = append(routing, vs.Key())
				}
			}
			// The Telemetry objects applied feed its listeners too.
			routing = append(routing, p.group.Telemetry.GetTelemetries()...)
			// So do the RequestAuthentications and AuthorizationPolicies,
			// and the EnvoyFilters patched onto them.
			routing = append(routing, p.group.Security.GetPolicies()...)
			if ef := p.group.EnvoyFilters; ef != nil {
				routing = append(routing, ef.Filters...)
				if !patched[p.group.Key] {
					patched[p.group.Key] = true
					addPatchStates(get, ef)
				}
			}
			slices.SortFunc(routing, compareKeys)
			routing = slices.Compact(routing)
			byGroup[p.group.Key] = routing
		}
		count := func(keys []config.Key, types []string) {
			acked, nack := proxyTypesState(p, newest, types)
			for _, k := range keys {
				o := get(k)
				o.Gateways++
				switch {
				case nack != "":
					o.Nacked++
					if o.FirstNack == "" {
						o.FirstNack = nack
					}
				case acked:
					o.Acked++
				}
			}
		}
		count(routing, routingTypes)
		count(shared, serviceTypes)
	}
	return out
}

// proxyTypesState reports whether the stream holds, ACKed, the view's
// version of every type in types that the view has, and the message of a
// NACK of the last response of one of them (empty when none).
func proxyTypesState(p *proxyState, st *streamState, types []string) (acked bool, nack string) {
	acked = true
	for _, u := range types {
		ts := st.types[u]
		if ts != nil && ts.nackedNonce != "" && ts.nackedNonce == ts.sentNonce {
			msg := "rejected"
			if ts.lastNack != nil && ts.lastNack.message != "" {
				msg = ts.lastNack.message
			}
			return false, msg
		}
		set := p.view.Set(u)
		want := set.Version
		if want == "" || (ts == nil && len(set.Items) == 0) {
			continue // nothing of the type to hold (RDS without routes)
		}
		if ts == nil || ts.ackedVersion != want {
			acked = false
		}
	}
	return acked, ""
}

// newestStream is the proxy's newest stream, the one Envoy uses.
func newestStream(p *proxyState) *streamState {
	var st *streamState
	for _, sid := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
		if st == nil || !p.streams[sid].openedAt.Before(st.openedAt) {
			st = p.streams[sid]
		}
	}
	return st
}

func compareKeys(a, b config.Key) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// configzStatus lists ObjectStatus by kind, namespace and name.
func (s *DiscoveryServer) configzStatus() []debugapi.ConfigzStatus {
	st := s.ObjectStatus()
	out := make([]debugapi.ConfigzStatus, 0, len(st))
	for _, k := range slices.SortedFunc(maps.Keys(st), compareKeys) {
		o := st[k]
		cs := debugapi.ConfigzStatus{Kind: k.Kind.String(), Namespace: k.Namespace, Name: k.Name, ObjectState: *o}
		for _, e := range o.Errors {
			cs.Errors = append(cs.Errors, debugapi.NewConfigzError("", e))
		}
		out = append(out, cs)
	}
	return out
}

// addPatchStates adds one gateway configuration's EnvoyFilter patch
// reports to the filters' states.
func addPatchStates(get func(config.Key) *model.ObjectState, ef *push.EnvoyFilterReport) {
	for _, r := range ef.Patches {
		o := get(config.Key{Kind: schema.EnvoyFilter, Namespace: r.Patch.Namespace, Name: r.Patch.Name})
		i := slices.IndexFunc(o.Patches, func(p model.PatchState) bool { return p.Index == r.Patch.Index })
		if i < 0 {
			o.Patches = append(o.Patches, model.PatchState{Index: r.Patch.Index, ApplyTo: r.ApplyTo.String(), Operation: r.Operation.String()})
			slices.SortFunc(o.Patches, func(a, b model.PatchState) int { return a.Index - b.Index })
			i = slices.IndexFunc(o.Patches, func(p model.PatchState) bool { return p.Index == r.Patch.Index })
		}
		ps := &o.Patches[i]
		ps.Configurations++
		ps.Matched += r.Matched
		ps.Changed += r.Changed
		ps.Failed += len(r.Failures)
		ps.Withheld += len(r.Withheld)
		if r.Skipped != "" {
			ps.Skipped = r.Skipped
		}
	}
}
