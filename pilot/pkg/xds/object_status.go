package xds

import (
	"maps"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// ObjectState is what the server knows now about one config object: how
// many connected gateways use the config it produced, how many hold it
// ACKed or NACKed, and its standing config problems. It is the input of
// the status written on Istio objects and of /debug/configz's per-object
// view.
//
// Attribution is per gateway group and coarse: a group's listeners and
// routes (LDS, RDS) come from its Gateways and the VirtualServices bound to
// them, so a NACK of LDS or RDS is counted against all of those; clusters
// and endpoints (CDS, EDS) are shared by every gateway, so a NACK of CDS
// or EDS is counted against every DestinationRule and ServiceEntry.
type ObjectState struct {
	// Gateways is the number of connected gateways using the object.
	Gateways int `json:"gateways"`
	// Acked of them hold, ACKed, the config the last push produced for
	// them; Nacked rejected the last response of a type the object feeds.
	Acked  int `json:"acked"`
	Nacked int `json:"nacked"`
	// FirstNack is the rejection message of the first NACKing gateway by
	// node id (deterministic).
	FirstNack string `json:"firstNack,omitempty"`
	// Errors are the object's standing source and translation problems.
	Errors []*config.Error `json:"-"`
}

// Types an object kind feeds.
var (
	routingTypes = []string{servedTypes[ldsIdx], servedTypes[rdsIdx]}
	serviceTypes = []string{servedTypes[cdsIdx], servedTypes[edsIdx]}
)

// ObjectStatus returns the state of every object that a connected gateway
// uses or that has a config problem. It reads the last push and the
// protocol state under the server's lock; nothing is translated.
func (s *DiscoveryServer) ObjectStatus() map[config.Key]*ObjectState {
	src, tr := s.currentErrors()
	out := map[config.Key]*ObjectState{}
	get := func(k config.Key) *ObjectState {
		o := out[k]
		if o == nil {
			o = &ObjectState{}
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
	for _, id := range slices.Sorted(maps.Keys(s.proxies)) {
		p := s.proxies[id]
		if p.group == nil || p.view == nil || p.group.key == proxylessKey || st == nil {
			continue
		}
		newest := newestStream(p)
		if newest == nil {
			continue
		}
		routing, ok := byGroup[p.group.key]
		if !ok { // once per group, not per proxy
			for _, gw := range p.group.gateways {
				routing = append(routing, gw)
				for _, vs := range st.push.VirtualServicesBoundTo(gw.Namespace + "/" + gw.Name) {
					routing = append(routing, vs.Key())
				}
			}
			slices.SortFunc(routing, compareKeys)
			routing = slices.Compact(routing)
			byGroup[p.group.key] = routing
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
		set := p.view.set(u)
		want := set.version
		if want == "" || (ts == nil && len(set.items) == 0) {
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

// ConfigzStatus is one object's state in /debug/configz: the same
// findings as the status written on it in Kubernetes mode.
type ConfigzStatus struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	ObjectState
	Errors []ConfigzError `json:"errors,omitempty"`
}

// configzStatus lists ObjectStatus by kind, namespace and name.
func (s *DiscoveryServer) configzStatus() []ConfigzStatus {
	st := s.ObjectStatus()
	out := make([]ConfigzStatus, 0, len(st))
	for _, k := range slices.SortedFunc(maps.Keys(st), compareKeys) {
		o := st[k]
		cs := ConfigzStatus{Kind: k.Kind.String(), Namespace: k.Namespace, Name: k.Name, ObjectState: *o}
		for _, e := range o.Errors {
			cs.Errors = append(cs.Errors, configzError("", e))
		}
		out = append(out, cs)
	}
	return out
}
