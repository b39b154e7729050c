package gatewayapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// maxPolicyAncestors is the most ancestors a PolicyStatus holds (the CRD's
// maxItems).
const maxPolicyAncestors = 16

// backendTLSStatus gives every BackendTLSPolicy its ancestors of
// Wayfinder: one per handled Gateway a route attached to it sends traffic
// to one of the policy's target Services through (the conformance suite
// looks for the Gateway), sorted by namespace/name, at most 16. Its
// conditions are Accepted (False with NoValidCACertificate, Invalid,
// TargetNotFound, or Conflicted when every target that Gateway reaches is
// another policy's) and ResolvedRefs (False with InvalidCACertificateRef
// or InvalidKind). A policy no Gateway of ours reaches gets no ancestor
// from Wayfinder: an entry, empty, so the writer removes stale ones.
// istiod 1.29 also reports the Service itself under its mesh controller;
// Wayfinder has no mesh.
func backendTLSStatus(in Input, rec *recorder, controller string, t metav1.Time) map[types.NamespacedName]gw.PolicyStatus {
	if len(in.BackendTLSPolicies) == 0 {
		return nil
	}
	reach, reachHost := gatewaysReaching(in, rec)
	out := make(map[types.NamespacedName]gw.PolicyStatus, len(in.BackendTLSPolicies))
	for _, p := range in.BackendTLSPolicies {
		r := rec.btls[p.Namespace+"/"+p.Name]
		var st gw.PolicyStatus
		if r != nil {
			byGateway := map[types.NamespacedName][]btlsTarget{}
			for _, tr := range r.targets {
				gws := map[types.NamespacedName]bool{}
				if tr.service != "" {
					maps.Copy(gws, reach[types.NamespacedName{Namespace: p.Namespace, Name: tr.service}])
				}
				for _, h := range tr.hosts {
					maps.Copy(gws, reachHost[h])
				}
				for g := range gws {
					byGateway[g] = append(byGateway[g], tr)
				}
			}
			gws := slices.SortedFunc(maps.Keys(byGateway), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
			for _, g := range gws[:min(len(gws), maxPolicyAncestors)] {
				st.Ancestors = append(st.Ancestors, gw.PolicyAncestorStatus{
					AncestorRef: gw.ParentReference{Group: ptr(gw.Group(Group)), Kind: ptr(gw.Kind(schema.GatewayKind.Name)),
						Namespace: ptr(gw.Namespace(g.Namespace)), Name: gw.ObjectName(g.Name)},
					ControllerName: gw.GatewayController(controller),
					Conditions:     backendTLSConditions(r, byGateway[g], p.Generation, t),
				})
			}
		}
		out[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = st
	}
	return out
}

// backendTLSConditions are a policy's conditions for one Gateway, which
// reaches targets of it.
func backendTLSConditions(r *btlsRec, targets []btlsTarget, gen int64, t metav1.Time) []metav1.Condition {
	acc := r.accepted
	if acc == nil {
		var conflicted []string
		for _, tr := range targets {
			if tr.notFound != "" && acc == nil {
				acc = &cond{reason: string(gw.PolicyReasonTargetNotFound), message: tr.notFound}
			}
			if tr.conflicted != "" {
				conflicted = append(conflicted, tr.conflicted)
			}
		}
		if acc == nil && len(conflicted) == len(targets) && len(targets) > 0 {
			acc = &cond{reason: string(gw.PolicyReasonConflicted),
				message: fmt.Sprintf("%s takes precedence for the same target (older, or first by name)", conflicted[0])}
		}
	}
	var out []metav1.Condition
	if acc == nil {
		out = append(out, condition(string(gw.PolicyConditionAccepted), true, string(gw.PolicyReasonAccepted), "", gen, t))
	} else {
		out = append(out, condition(string(gw.PolicyConditionAccepted), false, acc.reason, acc.message, gen, t))
	}
	if r.resolved == nil {
		out = append(out, condition(string(gw.BackendTLSPolicyConditionResolvedRefs), true, string(gw.BackendTLSPolicyReasonResolvedRefs), "", gen, t))
	} else {
		out = append(out, condition(string(gw.BackendTLSPolicyConditionResolvedRefs), false, r.resolved.reason, r.resolved.message, gen, t))
	}
	return out
}

// unmetTargets are the Services and ServiceEntry hosts whose applied
// BackendTLSPolicy asks for what Wayfinder cannot do, by the policy's
// Source.
type unmetTargets struct {
	services map[types.NamespacedName]string
	hosts    map[string]string
}

func (u unmetTargets) add(tr btlsTarget, ns, src string) {
	if tr.service != "" {
		u.services[types.NamespacedName{Namespace: ns, Name: tr.service}] = src
	}
	for _, h := range tr.hosts {
		u.hosts[h] = src
	}
}

// unmetBackendTLS gives every route with a backend among unmet (a
// wellKnownCACertificates set other than System) ResolvedRefs False, as
// the Gateway API asks of a BackendTLSPolicy the implementation cannot
// meet. Its requests fail (the policy's clusters are not built).
func (c *converter) unmetBackendTLS(unmet unmetTargets) {
	if len(unmet.services) == 0 && len(unmet.hosts) == 0 {
		return
	}
	mark := func(kind string, r metav1.Object, refs []gw.BackendObjectReference) {
		for i, b := range refs {
			var pol, what string
			switch group, k := deref(b.Group, ""), deref(b.Kind, "Service"); {
			case group == "" && k == "Service":
				svc := types.NamespacedName{Namespace: string(deref(b.Namespace, gw.Namespace(r.GetNamespace()))), Name: string(b.Name)}
				pol, what = unmet.services[svc], "Service "+svc.String()
			case string(group) == IstioGroup && string(k) == HostnameKind:
				pol, what = unmet.hosts[strings.ToLower(string(b.Name))], "host "+string(b.Name)
			}
			if pol != "" {
				c.st.refUnresolved(Source(kind, r), gw.RouteReasonUnsupportedValue,
					"backend %d: %s applies to %s and asks for CA certificates Wayfinder does not have", i, pol, what)
				return
			}
		}
	}
	forEachRouteBackend(c.in, mark)
}

// forEachRouteBackend calls f with every route and the Service-like
// backends it names (rules' backendRefs and RequestMirror filters).
func forEachRouteBackend(in Input, f func(kind string, r metav1.Object, refs []gw.BackendObjectReference)) {
	mirrors := func(fs []gw.HTTPRouteFilter) []gw.BackendObjectReference {
		var refs []gw.BackendObjectReference
		for _, f := range fs {
			if f.RequestMirror != nil {
				refs = append(refs, f.RequestMirror.BackendRef)
			}
		}
		return refs
	}
	for _, r := range in.HTTPRoutes {
		var refs []gw.BackendObjectReference
		for _, rule := range r.Spec.Rules {
			refs = append(refs, mirrors(rule.Filters)...)
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendObjectReference)
				refs = append(refs, mirrors(b.Filters)...)
			}
		}
		f(schema.HTTPRouteKind.Name, r, refs)
	}
	for _, r := range in.GRPCRoutes {
		var refs []gw.BackendObjectReference
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendObjectReference)
			}
		}
		f(schema.GRPCRouteKind.Name, r, refs)
	}
	for _, r := range in.TLSRoutes {
		var refs []gw.BackendObjectReference
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendObjectReference)
			}
		}
		f(schema.TLSRouteKind.Name, r, refs)
	}
	for _, r := range in.TCPRoutes {
		var refs []gw.BackendObjectReference
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendObjectReference)
			}
		}
		f(schema.TCPRouteKind.Name, r, refs)
	}
}

// gatewaysReaching maps each Service (namespace/name), and each host of a
// backend of kind Hostname, to the handled Gateways some route accepted by
// them names it as a backend of (rules' backendRefs and RequestMirror
// filters).
func gatewaysReaching(in Input, rec *recorder) (map[types.NamespacedName]map[types.NamespacedName]bool, map[string]map[types.NamespacedName]bool) {
	out := map[types.NamespacedName]map[types.NamespacedName]bool{}
	hosts := map[string]map[types.NamespacedName]bool{}
	add := func(kind string, r metav1.Object, refs []gw.BackendObjectReference) {
		var gws []types.NamespacedName
		for _, p := range rec.parents[Source(kind, r)] {
			if p == nil || p.accepted != nil {
				continue
			}
			if string(deref(p.ref.Group, gw.Group(Group))) != Group || string(deref(p.ref.Kind, gw.Kind(schema.GatewayKind.Name))) != schema.GatewayKind.Name {
				continue
			}
			gws = append(gws, types.NamespacedName{Namespace: string(deref(p.ref.Namespace, gw.Namespace(r.GetNamespace()))), Name: string(p.ref.Name)})
		}
		if len(gws) == 0 {
			return
		}
		for _, b := range refs {
			if string(deref(b.Group, "")) == IstioGroup && string(deref(b.Kind, "")) == HostnameKind {
				h := strings.ToLower(string(b.Name))
				if hosts[h] == nil {
					hosts[h] = map[types.NamespacedName]bool{}
				}
				for _, g := range gws {
					hosts[h][g] = true
				}
				continue
			}
			if deref(b.Group, "") != "" || deref(b.Kind, "Service") != "Service" {
				continue
			}
			svc := types.NamespacedName{Namespace: string(deref(b.Namespace, gw.Namespace(r.GetNamespace()))), Name: string(b.Name)}
			if out[svc] == nil {
				out[svc] = map[types.NamespacedName]bool{}
			}
			for _, g := range gws {
				out[svc][g] = true
			}
		}
	}
	forEachRouteBackend(in, add)
	return out, hosts
}
