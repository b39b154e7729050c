package route

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// The functions below expose single steps of the gateway translation to
// other generators (proxyless gRPC), which build their own routes from the
// same VirtualServices. Each returns the problems it found, located in vs;
// ok is false when one of them keeps the result from being used.

// TranslateMatch builds the Envoy match of one HTTPMatchRequest (nil:
// everything). field is the match's path in vs ("spec.http[0].match[1]").
func TranslateMatch(vs *config.Config, m *networking.HTTPMatchRequest, field string) (out *routev3.RouteMatch, errs []*config.Error, ok bool) {
	r := &reporter{}
	p := &problems{r: r, c: vs, proxyless: true}
	out = translateMatch(m, field, p)
	return out, r.errs, !p.fatal
}

// IsCatchAll reports whether m matches every request, so that nothing
// after it can.
func IsCatchAll(m *routev3.RouteMatch) bool { return isCatchAll(m) }

// TranslateFault builds the fault filter's per-route config, or nil when
// nothing would be injected.
func TranslateFault(vs *config.Config, f *networking.HTTPFaultInjection, field string) (out *faultv3.HTTPFault, errs []*config.Error, ok bool) {
	r := &reporter{}
	p := &problems{r: r, c: vs}
	out = translateFault(f, field, p)
	return out, r.errs, !p.fatal
}

// Destination is a route destination with its host and port worked out.
type Destination struct {
	// Cluster is "outbound|PORT|SUBSET|HOST".
	Cluster string
	Host    string
	Port    uint32
	Subset  string
}

// ResolveDestination resolves dst of a route of vs: short host names in
// vs's namespace, a missing port from the service's only port, and a
// subset that must be defined by the host's DestinationRule.
func ResolveDestination(push *model.PushContext, vs *config.Config, dst *networking.Destination, field string) (out Destination, errs []*config.Error, ok bool) {
	r := &reporter{}
	p := &problems{r: r, c: vs}
	d := resolveDestination(routeContext{push: push, vs: vs}, dst, field, p)
	return Destination{Cluster: d.cluster, Host: d.host, Port: d.port, Subset: d.subset}, r.errs, !p.fatal
}
