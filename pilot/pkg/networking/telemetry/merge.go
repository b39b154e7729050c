package telemetry

import (
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	telemetryv1 "istio.io/api/telemetry/v1"
	telemetryv1alpha1 "istio.io/api/telemetry/v1alpha1"
)

// gatewayMode is the workload mode istiod matches a gateway's Telemetry
// against (workloadMode(ListenerClassGateway)): a gateway is a client.
const gatewayMode = telemetryv1alpha1.WorkloadMode_CLIENT

// loggingSpec is one provider's merged access logging (istiod's
// loggingSpec).
type loggingSpec struct {
	disabled bool
	filter   *telemetryv1.AccessLogging_Filter
}

// mergeLogs follows istiod's mergeLogs (pilot/pkg/model/telemetry.go): the
// providers that log for the given mode, each with the filter of the last
// matching accessLogging that names it, or disabled. Without any
// accessLogging the default providers apply. A level that names providers
// replaces the set of the levels above it; one that names none inherits
// its parent's.
func mergeLogs(logs [][]*telemetryv1.AccessLogging, m *meshconfig.MeshConfig, mode telemetryv1alpha1.WorkloadMode) map[string]loggingSpec {
	providers := map[string]loggingSpec{}
	defaults := m.GetDefaultProviders().GetAccessLogging()
	if len(logs) == 0 {
		for _, dp := range defaults {
			providers[dp] = loggingSpec{}
		}
		return providers
	}

	inScope := map[string]bool{}
	for _, n := range defaults {
		inScope[n] = true
	}
	filters := map[string]loggingSpec{}
	for _, level := range logs {
		names := map[string]bool{}
		for _, l := range level {
			if !matchMode(l.GetMatch(), mode) {
				continue
			}
			for _, p := range providerNames(l.GetProviders()) {
				names[p] = true
				filters[p] = loggingSpec{filter: l.GetFilter()}
			}
		}
		if len(names) > 0 {
			inScope = names
		}
	}

	parent := defaults
	for _, level := range logs {
		for _, l := range level {
			names := providerNames(l.GetProviders())
			if len(names) == 0 {
				names = parent
			}
			parent = names
			for _, p := range names {
				if !inScope[p] || !matchMode(l.GetMatch(), mode) {
					continue
				}
				if l.GetDisabled().GetValue() {
					providers[p] = loggingSpec{disabled: true}
					continue
				}
				providers[p] = filters[p]
			}
		}
	}
	return providers
}

// matchMode is istiod's matchWorkloadMode.
func matchMode(s *telemetryv1.AccessLogging_LogSelector, mode telemetryv1alpha1.WorkloadMode) bool {
	if s == nil || s.GetMode() == telemetryv1alpha1.WorkloadMode_CLIENT_AND_SERVER {
		return true
	}
	return s.GetMode() == mode
}

func providerNames(refs []*telemetryv1.ProviderRef) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.GetName())
	}
	return out
}

// fetchProvider is istiod's fetchProvider: the first extension provider
// whose name equals name, ignoring case.
func fetchProvider(m *meshconfig.MeshConfig, name string) *meshconfig.MeshConfig_ExtensionProvider {
	for _, p := range m.GetExtensionProviders() {
		if strings.EqualFold(name, p.GetName()) {
			return p
		}
	}
	return nil
}

// tracingSpec is istiod's TracingSpec, for the one mode a gateway uses.
type tracingSpec struct {
	provider                     *meshconfig.MeshConfig_ExtensionProvider
	providerName                 string // as named, for problems when provider is nil
	disabled                     bool
	randomSamplingPercentage     *float64
	customTags                   map[string]*telemetryv1.Tracing_CustomTag
	useRequestIDForTraceSampling bool
	enableIstioTags              bool
}

// mergeTracing follows istiod's Telemetries.Tracing
// (pilot/pkg/model/telemetry.go) for a gateway, which uses the client
// spec: nil when no tracing is configured and there is no default tracing
// provider (the mesh config's enableTracing then decides). The first
// default provider starts; each tracing entry that applies to clients
// overrides, in order, the provider (the first it names), the span
// reporting, the custom tags (whole, not merged), the sampling, and the
// request ID and Istio tag switches. A spec left without a provider is
// disabled.
func mergeTracing(tracing []*telemetryv1.Tracing, m *meshconfig.MeshConfig) *tracingSpec {
	defaults := m.GetDefaultProviders().GetTracing()
	if len(tracing) == 0 && len(defaults) == 0 {
		return nil
	}
	spec := &tracingSpec{useRequestIDForTraceSampling: true, enableIstioTags: true}
	if len(defaults) > 0 {
		spec.providerName = defaults[0]
		spec.provider = fetchProvider(m, defaults[0])
	}
	for _, t := range tracing {
		if t.GetMatch() != nil && t.GetMatch().GetMode() == telemetryv1alpha1.WorkloadMode_SERVER {
			continue
		}
		if names := providerNames(t.GetProviders()); len(names) > 0 {
			spec.providerName = names[0]
			spec.provider = fetchProvider(m, names[0])
		}
		if t.GetDisableSpanReporting() != nil {
			spec.disabled = t.GetDisableSpanReporting().GetValue()
		}
		if t.GetCustomTags() != nil {
			spec.customTags = t.GetCustomTags()
		}
		if t.GetRandomSamplingPercentage() != nil {
			v := t.GetRandomSamplingPercentage().GetValue()
			spec.randomSamplingPercentage = &v
		}
		if t.GetUseRequestIdForTraceSampling() != nil {
			spec.useRequestIDForTraceSampling = t.GetUseRequestIdForTraceSampling().GetValue()
		}
		if t.GetEnableIstioTags() != nil {
			spec.enableIstioTags = t.GetEnableIstioTags().GetValue()
		}
	}
	if spec.provider == nil {
		spec.disabled = true
	}
	return spec
}
