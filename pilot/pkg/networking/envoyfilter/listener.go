package envoyfilter

import (
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

const hcmName = "envoy.filters.network.http_connection_manager"

// listenerPhase orders listener patches as istiod's patchListener applies
// them: a listener's own MERGE/REMOVE, its listener filters, each filter
// chain's MERGE/REMOVE, its network filters (positional ops, then merges),
// each HTTP connection manager's HTTP filters (positional, then merges),
// and last FILTER_CHAIN ADDs (which later patches do not see). Patches of
// one phase keep their order. Running each patch over the whole listener
// in this order gives istiod's result, since istiod's per-chain and
// per-filter loops touch disjoint parts. -1: not a patch of an existing
// listener (LISTENER ADD, or another type).
func listenerPhase(p *patch) int {
	op := p.operation
	switch p.applyTo {
	case networking.EnvoyFilter_LISTENER:
		if op == networking.EnvoyFilter_Patch_MERGE || op == networking.EnvoyFilter_Patch_REMOVE {
			return 0
		}
	case networking.EnvoyFilter_LISTENER_FILTER:
		return 1
	case networking.EnvoyFilter_FILTER_CHAIN:
		if op == networking.EnvoyFilter_Patch_ADD {
			return 7
		}
		if op == networking.EnvoyFilter_Patch_MERGE || op == networking.EnvoyFilter_Patch_REMOVE {
			return 2
		}
	case networking.EnvoyFilter_NETWORK_FILTER:
		if op == networking.EnvoyFilter_Patch_MERGE {
			return 4
		}
		return 3
	case networking.EnvoyFilter_HTTP_FILTER:
		if op == networking.EnvoyFilter_Patch_MERGE {
			return 6
		}
		return 5
	}
	return -1
}

// patchListener applies p to l (a clone it may change). matched says the
// patch selected something in l; removed that l is to be dropped.
func patchListener(p *patch, l *listenerv3.Listener) (matched, removed bool, err error) {
	if !listenerMatch(l, p) {
		return false, false, nil
	}
	switch p.applyTo {
	case networking.EnvoyFilter_LISTENER:
		if p.operation == networking.EnvoyFilter_Patch_REMOVE {
			return true, true, nil
		}
		mergeProto(l, p.value)
		return true, false, nil
	case networking.EnvoyFilter_LISTENER_FILTER:
		matched, err = patchListenerFilters(p, l)
		return matched, false, err
	}
	// The rest work on filter chains: those with filters, then the
	// default one (istiod skips chains without filters).
	chains := slices.Clone(l.GetFilterChains())
	if dc := l.GetDefaultFilterChain(); dc.GetFilters() != nil {
		chains = append(chains, dc)
	}
	if p.applyTo == networking.EnvoyFilter_FILTER_CHAIN && p.operation == networking.EnvoyFilter_Patch_ADD {
		l.FilterChains = append(l.FilterChains, proto.Clone(p.value).(*listenerv3.FilterChain))
		return true, false, nil
	}
	for _, fc := range chains {
		if fc.Filters == nil || !filterChainMatch(fc, p) {
			continue
		}
		m, err := patchFilterChain(p, fc)
		if err != nil {
			return true, false, err
		}
		matched = matched || m
	}
	if p.applyTo == networking.EnvoyFilter_FILTER_CHAIN && p.operation == networking.EnvoyFilter_Patch_REMOVE {
		l.FilterChains = slices.DeleteFunc(l.FilterChains, func(fc *listenerv3.FilterChain) bool { return fc.Filters == nil })
		if l.DefaultFilterChain != nil && l.DefaultFilterChain.Filters == nil {
			l.DefaultFilterChain = nil
		}
	}
	return matched, false, nil
}

func patchFilterChain(p *patch, fc *listenerv3.FilterChain) (bool, error) {
	switch p.applyTo {
	case networking.EnvoyFilter_FILTER_CHAIN:
		if p.operation == networking.EnvoyFilter_Patch_REMOVE {
			fc.Filters = nil
			return true, nil
		}
		return true, mergeFilterChain(fc, p.value.(*listenerv3.FilterChain))
	case networking.EnvoyFilter_NETWORK_FILTER:
		if p.operation != networking.EnvoyFilter_Patch_MERGE {
			var ok bool
			fc.Filters, ok = positional(p.operation, fc.Filters, hasNetworkFilterMatch(p),
				func(f *listenerv3.Filter) bool { return networkFilterMatch(f, p) },
				func() *listenerv3.Filter { return proto.Clone(p.value).(*listenerv3.Filter) })
			return ok, nil
		}
		matched := false
		for _, f := range fc.Filters {
			if !networkFilterMatch(f, p) || f.GetTypedConfig() == nil {
				continue
			}
			matched = true
			if err := mergeNetworkFilter(f, p.value.(*listenerv3.Filter)); err != nil {
				return true, err
			}
		}
		return matched, nil
	case networking.EnvoyFilter_HTTP_FILTER:
		matched := false
		for _, f := range fc.Filters {
			if f.GetName() != hcmName || !networkFilterMatch(f, p) || f.GetTypedConfig() == nil {
				continue
			}
			m, err := patchHTTPFilters(p, f)
			if err != nil {
				return true, err
			}
			matched = matched || m
		}
		return matched, nil
	}
	return false, nil
}

// mergeFilterChain is istiod's FILTER_CHAIN MERGE: a transport socket of
// the same name is merged at the typed-config level, else proto merge.
func mergeFilterChain(fc, v *listenerv3.FilterChain) error {
	// As istiod: a socket of the same name is merged at the typed-config
	// level and the rest of the value ignored; otherwise the whole value
	// is proto-merged (a differently named socket replaces the name and
	// typed config).
	if ts := v.GetTransportSocket(); ts != nil && fc.GetTransportSocket() != nil && ts.GetName() == fc.GetTransportSocket().GetName() {
		dst, src := fc.GetTransportSocket().GetTypedConfig(), ts.GetTypedConfig()
		if dst != nil && src != nil {
			merged, err := mergeAny(dst, src)
			if err != nil {
				return err
			}
			fc.TransportSocket.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: merged}
		}
		return nil
	}
	mergeProto(fc, v)
	return nil
}

// mergeNetworkFilter is istiod's network filter MERGE: the name may be
// overwritten, the typed configs are merged.
func mergeNetworkFilter(f, v *listenerv3.Filter) error {
	if v.GetTypedConfig() != nil {
		merged, err := mergeAny(f.GetTypedConfig(), v.GetTypedConfig())
		if err != nil {
			return err
		}
		f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: merged}
	}
	if v.GetName() != "" {
		f.Name = v.GetName()
	}
	return nil
}

func patchHTTPFilters(p *patch, f *listenerv3.Filter) (bool, error) {
	hcm := &hcmv3.HttpConnectionManager{}
	if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
		// istiod skips a connection manager it cannot read.
		return false, nil
	}
	matched := false
	if p.operation != networking.EnvoyFilter_Patch_MERGE {
		hcm.HttpFilters, matched = positional(p.operation, hcm.HttpFilters, hasHTTPFilterMatch(p),
			func(h *hcmv3.HttpFilter) bool { return httpFilterMatch(h, p) },
			func() *hcmv3.HttpFilter { return proto.Clone(p.value).(*hcmv3.HttpFilter) })
	} else {
		v := p.value.(*hcmv3.HttpFilter)
		for _, h := range hcm.HttpFilters {
			if !httpFilterMatch(h, p) || h.GetTypedConfig() == nil {
				continue
			}
			matched = true
			if v.GetTypedConfig() != nil {
				merged, err := mergeAny(h.GetTypedConfig(), v.GetTypedConfig())
				if err != nil {
					return true, err
				}
				h.ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: merged}
			}
			if v.GetName() != "" {
				h.Name = v.GetName()
			}
		}
	}
	if !matched {
		return false, nil
	}
	a, err := protoconv.Any(hcm)
	if err != nil {
		return true, err
	}
	f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	return true, nil
}

func patchListenerFilters(p *patch, l *listenerv3.Listener) (bool, error) {
	if p.operation != networking.EnvoyFilter_Patch_MERGE {
		var ok bool
		l.ListenerFilters, ok = positional(p.operation, l.ListenerFilters, hasListenerFilterMatch(p),
			func(f *listenerv3.ListenerFilter) bool { return listenerFilterMatch(f, p) },
			func() *listenerv3.ListenerFilter { return proto.Clone(p.value).(*listenerv3.ListenerFilter) })
		return ok, nil
	}
	if !hasListenerFilterMatch(p) {
		return false, nil
	}
	v := p.value.(*listenerv3.ListenerFilter)
	matched := false
	for _, f := range l.ListenerFilters {
		if !listenerFilterMatch(f, p) || f.GetTypedConfig() == nil {
			continue
		}
		matched = true
		if v.GetTypedConfig() != nil {
			merged, err := mergeAny(f.GetTypedConfig(), v.GetTypedConfig())
			if err != nil {
				return true, err
			}
			f.ConfigType = &listenerv3.ListenerFilter_TypedConfig{TypedConfig: merged}
		}
		// istiod writes the new name onto its own patch value, not the
		// filter (mergeListenerFilter): a listener filter keeps its name.
	}
	return matched, nil
}

func listenerMatch(l *listenerv3.Listener, p *patch) bool {
	m := p.match.GetListener()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != l.GetName() {
		return false
	}
	if m.GetPortNumber() != 0 && l.GetAddress().GetSocketAddress().GetPortValue() != m.GetPortNumber() {
		return false
	}
	return true
}

func filterChainMatch(fc *listenerv3.FilterChain, p *patch) bool {
	m := p.match.GetListener().GetFilterChain()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != fc.GetName() {
		return false
	}
	fcm := fc.GetFilterChainMatch()
	if m.GetSni() != "" && !slices.Contains(fcm.GetServerNames(), m.GetSni()) {
		return false
	}
	if m.GetTransportProtocol() != "" && (fcm == nil || fcm.GetTransportProtocol() != m.GetTransportProtocol()) {
		return false
	}
	if m.GetApplicationProtocols() != "" {
		if fcm == nil {
			return false
		}
		for _, ap := range strings.Split(m.GetApplicationProtocols(), ",") {
			if !slices.Contains(fcm.GetApplicationProtocols(), ap) {
				return false
			}
		}
	}
	if m.GetDestinationPort() > 0 && (fcm.GetDestinationPort() == nil || fcm.GetDestinationPort().GetValue() != m.GetDestinationPort()) {
		return false
	}
	return true
}

func hasListenerFilterMatch(p *patch) bool { return p.match.GetListener().GetListenerFilter() != "" }

func listenerFilterMatch(f *listenerv3.ListenerFilter, p *patch) bool {
	return !hasListenerFilterMatch(p) || p.match.GetListener().GetListenerFilter() == f.GetName()
}

func hasNetworkFilterMatch(p *patch) bool {
	return p.match.GetListener().GetFilterChain().GetFilter() != nil
}

func networkFilterMatch(f *listenerv3.Filter, p *patch) bool {
	return !hasNetworkFilterMatch(p) || p.match.GetListener().GetFilterChain().GetFilter().GetName() == f.GetName()
}

func hasHTTPFilterMatch(p *patch) bool {
	return hasNetworkFilterMatch(p) && p.match.GetListener().GetFilterChain().GetFilter().GetSubFilter() != nil
}

func httpFilterMatch(h *hcmv3.HttpFilter, p *patch) bool {
	return !hasHTTPFilterMatch(p) || p.match.GetListener().GetFilterChain().GetFilter().GetSubFilter().GetName() == h.GetName()
}
