package envoyfilter

import (
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Filter is one EnvoyFilter object.
type Filter struct {
	Name      string
	Namespace string
	// Created is the object's creation time, which orders filters of equal
	// priority.
	Created time.Time
	Spec    *networking.EnvoyFilter
}

// Priority is spec.priority.
func (f Filter) Priority() int32 { return f.Spec.GetPriority() }

// PatchRef names one patch: spec.configPatches[Index] of a filter.
type PatchRef struct {
	Namespace string
	Name      string
	Index     int
}

func (p PatchRef) String() string {
	return fmt.Sprintf("EnvoyFilter %s/%s spec.configPatches[%d]", p.Namespace, p.Name, p.Index)
}

// ResourceType is the xDS type of a patched resource.
type ResourceType uint8

const (
	Listener ResourceType = iota + 1
	RouteConfiguration
	Cluster
)

func (t ResourceType) String() string {
	switch t {
	case Listener:
		return "Listener"
	case RouteConfiguration:
		return "RouteConfiguration"
	case Cluster:
		return "Cluster"
	}
	return "Unknown"
}

// ResourceRef names one resource.
type ResourceRef struct {
	Type ResourceType
	Name string
}

func (r ResourceRef) String() string { return r.Type.String() + " " + r.Name }

// Withheld names a patch not to apply to one resource (one whose patched
// form Envoy rejected).
type Withheld struct {
	Patch    PatchRef
	Resource ResourceRef
}

// Proxy is what patch matches read of the proxy (match.proxy).
type Proxy struct {
	// Version is the proxy's Istio version (node metadata ISTIO_VERSION),
	// matched by match.proxy.proxyVersion.
	Version string
	// Metadata is the proxy's node metadata as strings, matched by
	// match.proxy.metadata.
	Metadata map[string]string
}

// Input is one gateway configuration's translated resources and the
// filters to apply to them.
type Input struct {
	// Filters are the filters that apply, in order (Select's result).
	Filters []Filter
	Proxy   Proxy
	// PortMap maps a gateway listener port to the service ports that
	// reach it (istiod's GatewayPortMap): a routeConfiguration portNumber
	// match on a route of that listener port matches any of them. A port
	// not in the map matches itself.
	PortMap map[uint32][]uint32
	// The resources; never mutated.
	Listeners           []*listenerv3.Listener
	RouteConfigurations []*routev3.RouteConfiguration
	Clusters            []*clusterv3.Cluster
	// Withhold are (patch, resource) pairs to skip.
	Withhold map[Withheld]bool
	// Values, when set, caches the patch values built from the filters
	// across calls (see Values).
	Values *Values
}

// Failure is one resource a patch could not be applied to.
type Failure struct {
	Resource ResourceRef
	// Error is the first validation error of the patched resource.
	Error string
}

// PatchReport is what one patch did.
type PatchReport struct {
	Patch     PatchRef
	ApplyTo   networking.EnvoyFilter_ApplyTo
	Operation networking.EnvoyFilter_Patch_Operation
	// Skipped says why the patch never ran (its context or proxy match
	// rules out this gateway, or its value could not be built); empty when
	// it ran.
	Skipped string
	// Matched counts resources the patch's match selected (for ADD: the
	// resources it added); Changed those it changed (or added) and that
	// were served changed.
	Matched int
	Changed int
	// Failures are resources whose patched form did not validate; they
	// are served without the patch.
	Failures []Failure
	// Withheld are resources Input.Withhold kept the patch from.
	Withheld []ResourceRef
}

// Result is the patched resources and what each patch did.
type Result struct {
	Listeners           []*listenerv3.Listener
	RouteConfigurations []*routev3.RouteConfiguration
	Clusters            []*clusterv3.Cluster
	// Patches has one report per patch of every input filter, in filter
	// order and then patch index.
	Patches []PatchReport
	// Touched lists, per resource, the patches that changed, added or
	// removed it, in application order: a NACK of a resource is
	// attributed to them, and withholding them (Input.Withhold) serves the
	// resource as translated.
	Touched map[ResourceRef][]PatchRef
	// Errors are problems with the filters (values that cannot be built,
	// failures, patches that matched nothing as warnings), keyed by the
	// EnvoyFilter and naming spec.configPatches[i].
	Errors []*config.Error
}

// FromConfigs reads the EnvoyFilter objects of cfgs (a push's
// EnvoyFilters) as the patcher takes them; other kinds are skipped.
func FromConfigs(cfgs []config.Config) []Filter {
	out := make([]Filter, 0, len(cfgs))
	for _, c := range cfgs {
		if spec, ok := c.Spec.(*networking.EnvoyFilter); ok {
			out = append(out, Filter{Name: c.Name, Namespace: c.Namespace, Created: c.CreationTimestamp, Spec: spec})
		}
	}
	return out
}
