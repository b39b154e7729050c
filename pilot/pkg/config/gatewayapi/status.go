package gatewayapi

import (
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// RouteKey names a route of any kind.
type RouteKey struct {
	Kind      string // HTTPRoute, GRPCRoute, TLSRoute, TCPRoute
	Namespace string
	Name      string
}

// Status is the Gateway API status Wayfinder computes for the objects it
// handles: GatewayClasses of its controllerName, Gateways of those
// classes, and, per route, only the parents entries for parentRefs naming
// one of those Gateways (other controllers own the other entries). An
// object absent from a map gets no status from Wayfinder.
type Status struct {
	GatewayClasses map[string]gw.GatewayClassStatus
	Gateways       map[types.NamespacedName]gw.GatewayStatus
	Routes         map[RouteKey][]gw.RouteParentStatus
	// BackendTLSPolicies: every policy, with Wayfinder's ancestors
	// (backendtls_status.go).
	BackendTLSPolicies map[types.NamespacedName]gw.PolicyStatus
	// ListenerSets whose parentRef names a handled Gateway
	// (listenerset_status.go).
	ListenerSets map[types.NamespacedName]gw.ListenerSetStatus
}

// Result is a conversion together with the status it implies.
type Result struct {
	Configs []config.Config
	Errors  []*config.Error
	Status  Status
	// SecretGrants authorize the kubernetes-gateway:// Secrets of other
	// namespaces that Configs name.
	SecretGrants SecretGrants
	// Referenced are the Secrets and ConfigMaps conversion looked up.
	Referenced Referenced
}

// ConvertWithStatus converts like Convert and computes the status of every
// handled object from the same decisions. Conditions carry the objects'
// metadata.generation as observedGeneration and now as
// lastTransitionTime (the writer keeps the stored time when a condition
// holds).
func ConvertWithStatus(in Input, opts Options, now time.Time) Result {
	opts = opts.withDefaults()
	cfgs, errs, rec := convert(in, opts)
	t := metav1.NewTime(now.UTC().Truncate(time.Second))
	st := Status{GatewayClasses: map[string]gw.GatewayClassStatus{},
		Gateways: map[types.NamespacedName]gw.GatewayStatus{}, Routes: map[RouteKey][]gw.RouteParentStatus{}}
	for _, gc := range in.GatewayClasses {
		if string(gc.Spec.ControllerName) != opts.ControllerName {
			continue
		}
		st.GatewayClasses[gc.Name] = gw.GatewayClassStatus{Conditions: []metav1.Condition{
			condition(string(gw.GatewayClassConditionStatusAccepted), true, string(gw.GatewayClassReasonAccepted),
				"handled by "+opts.ControllerName, gc.Generation, t),
		}, SupportedFeatures: supportedFeatures()}
	}
	for _, g := range in.Gateways {
		if !rec.handled[g.Namespace+"/"+g.Name] {
			continue
		}
		addrs, where := gatewayAddress(g, in, opts.DomainSuffix)
		st.Gateways[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = gatewayStatus(g, rec, t, addrs, where, opts.ControllerName)
	}
	routes := func(kind string, objs []metav1.Object) {
		for _, r := range objs {
			if ps := routeParents(Source(kind, r), r.GetGeneration(), rec, opts.ControllerName, t); len(ps) > 0 {
				st.Routes[RouteKey{Kind: kind, Namespace: r.GetNamespace(), Name: r.GetName()}] = ps
			}
		}
	}
	routes(schema.HTTPRouteKind.Name, objects(in.HTTPRoutes))
	routes(schema.GRPCRouteKind.Name, objects(in.GRPCRoutes))
	routes(schema.TLSRouteKind.Name, objects(in.TLSRoutes))
	routes(schema.TCPRouteKind.Name, objects(in.TCPRoutes))
	st.BackendTLSPolicies = backendTLSStatus(in, rec, opts.ControllerName, t)
	listenerSetStatus(&st, rec, opts.ControllerName, t)
	return Result{Configs: cfgs, Errors: errs, Status: st, SecretGrants: rec.secrets, Referenced: rec.referenced}
}

func objects[T metav1.Object](in []T) []metav1.Object {
	out := make([]metav1.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

func condition(typ string, ok bool, reason, msg string, gen int64, t metav1.Time) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: t}
}

// gatewayStatus gives a handled Gateway Accepted and Programmed and each
// listener its conditions. Programmed needs both a served listener and an
// address (addrs, from the Service where names; see deployment.go);
// its message starts with the controller name, which tells the status
// writer the condition is Wayfinder's when the Gateway stops being ours.
func gatewayStatus(g *gw.Gateway, rec *recorder, t metav1.Time, addrs []gw.GatewayStatusAddress, where, ctrl string) gw.GatewayStatus {
	gen := g.Generation
	recs := rec.listeners[g.Namespace+"/"+g.Name]
	conflicts := listenerConflicts(g.Spec.Listeners)
	mixedConflicts := mixedTermination(g.Spec.Listeners)
	maps.Copy(conflicts, mixedConflicts)
	var out gw.GatewayStatus
	var accepted, programmed int
	for _, l := range g.Spec.Listeners {
		r := recs[l.Name]
		if r == nil {
			r = &listenerRec{}
		}
		ls := gw.ListenerStatus{Name: l.Name, AttachedRoutes: r.attached, SupportedKinds: supportedKinds(l)}
		if _, mixed := mixedConflicts[l.Name]; mixed {
			// Refused for mixed termination, it takes no kind of route
			// (TLSRouteListenerMixedTerminationNotSupported).
			ls.SupportedKinds = nil
		}
		acc := r.accepted
		if acc == nil {
			accepted++
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionAccepted), true, string(gw.ListenerReasonAccepted), "", gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionAccepted), false, acc.reason, acc.message, gen, t))
		}
		res := r.resolved
		if res == nil {
			res = invalidRouteKinds(l)
		}
		if res == nil {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionResolvedRefs), true, string(gw.ListenerReasonResolvedRefs), "", gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionResolvedRefs), false, res.reason, res.message, gen, t))
		}
		if r.programmed {
			programmed++
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionProgrammed), true, string(gw.ListenerReasonProgrammed), "", gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionProgrammed), false, string(gw.ListenerReasonInvalid), "the listener is not served; see its other conditions", gen, t))
		}
		if c, ok := conflicts[l.Name]; ok {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionConflicted), true, c.reason, c.message, gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerConditionConflicted), false, string(gw.ListenerReasonNoConflicts), "", gen, t))
		}
		out.Listeners = append(out.Listeners, ls)
	}
	n := len(g.Spec.Listeners)
	switch rej := rec.rejected[g.Namespace+"/"+g.Name]; {
	case rej != nil:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionAccepted), false, rej.reason, rej.message, gen, t))
	case accepted == n:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionAccepted), true, string(gw.GatewayReasonAccepted), "", gen, t))
	case accepted > 0:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionAccepted), true, string(gw.GatewayReasonListenersNotValid),
			fmt.Sprintf("%d of %d listeners are not accepted", n-accepted, n), gen, t))
	default:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionAccepted), false, string(gw.GatewayReasonListenersNotValid), "no listener is accepted", gen, t))
	}
	// The Gateway's own references (spec.tls.backend), as istiod 1.29
	// reports them: ResolvedRefs is always set.
	if u := rec.unresolved[g.Namespace+"/"+g.Name]; u != nil {
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionResolvedRefs), false, u.reason, u.message, gen, t))
	} else {
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionResolvedRefs), true, string(gw.GatewayReasonResolvedRefs), "", gen, t))
	}
	if c := insecureFrontendValidation(g); c != nil {
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionInsecureFrontendValidationMode), true,
			string(gw.GatewayReasonConfigurationChanged), c.message, gen, t))
	}
	served := "listeners served to the proxies labelled " + GatewayNameLabel + "=" + g.Name
	if programmed < n {
		served = fmt.Sprintf("%d of %d listeners served", programmed, n)
	}
	switch {
	case programmed == 0:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionProgrammed), false, string(gw.GatewayReasonInvalid), ctrl+": no listener is served", gen, t))
	case len(addrs) == 0:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionProgrammed), false, string(gw.GatewayReasonAddressNotAssigned),
			ctrl+": "+served+"; no address: "+where, gen, t))
	default:
		out.Conditions = append(out.Conditions, condition(string(gw.GatewayConditionProgrammed), true, string(gw.GatewayReasonProgrammed),
			ctrl+": "+served+"; addresses from "+where, gen, t))
	}
	out.Addresses = addrs
	return out
}

// supportedKinds are the route kinds a listener takes: those its protocol
// carries, narrowed to allowedRoutes.kinds when listed.
func supportedKinds(l gw.Listener) []gw.RouteGroupKind {
	var out []gw.RouteGroupKind
	for _, k := range protocolKinds(&listener{spec: l}) {
		if kindAllowed(&listener{spec: l}, k) {
			out = append(out, gw.RouteGroupKind{Group: ptr(gw.Group(Group)), Kind: gw.Kind(k)})
		}
	}
	return out
}

// invalidRouteKinds reports an allowedRoutes.kinds entry the listener's
// protocol cannot carry.
func invalidRouteKinds(l gw.Listener) *cond {
	if l.AllowedRoutes == nil {
		return nil
	}
	kinds := protocolKinds(&listener{spec: l})
	for _, k := range l.AllowedRoutes.Kinds {
		if string(deref(k.Group, gw.Group(Group))) != Group || !slices.Contains(kinds, string(k.Kind)) {
			return &cond{reason: string(gw.ListenerReasonInvalidRouteKinds),
				message: fmt.Sprintf("route kind %s is not supported on a %s listener", k.Kind, l.Protocol)}
		}
	}
	return nil
}

// listenerConflicts finds listeners sharing a port with a different kind
// of protocol (ProtocolConflict: HTTP-like, TLS and TCP cannot share one)
// or with the same protocol and hostname (HostnameConflict).
func listenerConflicts(ls []gw.Listener) map[gw.SectionName]cond {
	family := func(p gw.ProtocolType) string {
		switch p {
		case gw.HTTPProtocolType:
			return "http"
		case gw.HTTPSProtocolType, gw.TLSProtocolType:
			return "tls"
		}
		return string(p)
	}
	out := map[gw.SectionName]cond{}
	for i, a := range ls {
		for j, b := range ls {
			if i == j || a.Port != b.Port {
				continue
			}
			if family(a.Protocol) != family(b.Protocol) {
				out[a.Name] = cond{reason: string(gw.ListenerReasonProtocolConflict),
					message: fmt.Sprintf("listener %s uses port %d with protocol %s", b.Name, b.Port, b.Protocol)}
				continue
			}
			if deref(a.Hostname, "") == deref(b.Hostname, "") {
				out[a.Name] = cond{reason: string(gw.ListenerReasonHostnameConflict),
					message: fmt.Sprintf("listener %s uses port %d with the same hostname", b.Name, b.Port)}
			}
		}
	}
	return out
}

// routeParents gives a route one parents entry per parentRef naming a
// handled Gateway: Accepted as attachment decided, ResolvedRefs from its
// backends (resolved for status even where no listener accepted it).
func routeParents(src string, gen int64, rec *recorder, controller string, t metav1.Time) []gw.RouteParentStatus {
	var out []gw.RouteParentStatus
	refs := rec.refs[src]
	for _, p := range rec.parents[src] {
		if p == nil {
			continue
		}
		ps := gw.RouteParentStatus{ParentRef: p.ref, ControllerName: gw.GatewayController(controller)}
		if p.accepted == nil {
			ps.Conditions = append(ps.Conditions, condition(string(gw.RouteConditionAccepted), true, string(gw.RouteReasonAccepted), "", gen, t))
		} else {
			ps.Conditions = append(ps.Conditions, condition(string(gw.RouteConditionAccepted), false, p.accepted.reason, p.accepted.message, gen, t))
		}
		if refs != nil {
			ps.Conditions = append(ps.Conditions, condition(string(gw.RouteConditionResolvedRefs), false, refs.reason, refs.message, gen, t))
		} else {
			ps.Conditions = append(ps.Conditions, condition(string(gw.RouteConditionResolvedRefs), true, string(gw.RouteReasonResolvedRefs), "", gen, t))
		}
		out = append(out, ps)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
