package gatewayapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// listenerSetStatus fills st.ListenerSets with the status of every
// ListenerSet whose parentRef names a handled Gateway, and each such
// Gateway's status.attachedListenerSets, from what conversion decided
// (listenerset.go):
//
//   - not allowed by the Gateway (allowedListeners), or its Gateway not
//     accepted: Accepted and Programmed False, NotAllowed or
//     ParentNotAccepted, no listener status;
//   - otherwise each listener as a Gateway's (Accepted, ResolvedRefs,
//     Programmed, Conflicted, supportedKinds, attachedRoutes), a listener
//     that lost a conflict Accepted and Programmed False with the conflict's
//     reason and Conflicted True; the set is Accepted when one listener is
//     accepted with its references resolved (reason ListenersNotValid when
//     some listeners are not accepted), else Accepted and Programmed False
//     ListenersNotValid; Programmed when one listener is served.
//
// A Gateway's attachedListenerSets counts its accepted ListenerSets; it is
// written only on Gateways some ListenerSet names.
func listenerSetStatus(st *Status, rec *recorder, ctrl string, t metav1.Time) {
	if len(rec.sets.order) == 0 {
		return
	}
	st.ListenerSets = map[types.NamespacedName]gw.ListenerSetStatus{}
	attached := map[types.NamespacedName]int32{}
	for _, r := range rec.sets.order {
		parent := types.NamespacedName{Namespace: r.parent.Namespace, Name: r.parent.Name}
		if _, ok := attached[parent]; !ok {
			attached[parent] = 0
		}
		s, ok := setStatus(r, rec, ctrl, t)
		if ok {
			attached[parent]++
		}
		st.ListenerSets[types.NamespacedName{Namespace: r.set.Namespace, Name: r.set.Name}] = s
	}
	for k, n := range attached {
		gs, ok := st.Gateways[k]
		if !ok {
			continue
		}
		gs.AttachedListenerSets = ptr(n)
		st.Gateways[k] = gs
	}
}

// setStatus is one ListenerSet's status, and whether it is accepted
// (attached to its Gateway).
func setStatus(r *setRec, rec *recorder, ctrl string, t metav1.Time) (gw.ListenerSetStatus, bool) {
	gen := r.set.Generation
	var out gw.ListenerSetStatus
	if r.rejected != nil {
		out.Conditions = []metav1.Condition{
			condition(string(gw.ListenerSetConditionAccepted), false, r.rejected.reason, r.rejected.message, gen, t),
			condition(string(gw.ListenerSetConditionProgrammed), false, r.rejected.reason, ctrl+": "+r.rejected.message, gen, t),
		}
		return out, false
	}
	recs := rec.listeners[r.pseudo.Namespace+"/"+r.pseudo.Name]
	// valid counts the listeners accepted with their references resolved:
	// a set whose only listener lacks its ReferenceGrant is not accepted
	// (ListenersNotValid), as ListenerSetReferenceGrant expects.
	var accepted, valid, programmed int
	for _, e := range r.set.Spec.Listeners {
		l := gw.Listener(e)
		lr := recs[l.Name]
		if lr == nil {
			lr = &listenerRec{}
		}
		ls := gw.ListenerEntryStatus{Name: l.Name, AttachedRoutes: lr.attached, SupportedKinds: supportedKinds(l)}
		conflict, conflicted := r.conflicts[l.Name]
		if acc := lr.accepted; acc == nil {
			accepted++
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionAccepted), true, string(gw.ListenerEntryReasonAccepted), "", gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionAccepted), false, acc.reason, acc.message, gen, t))
		}
		res := lr.resolved
		if res == nil {
			res = invalidRouteKinds(l)
		}
		if res == nil {
			if lr.accepted == nil {
				valid++
			}
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionResolvedRefs), true, string(gw.ListenerEntryReasonResolvedRefs), "", gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionResolvedRefs), false, res.reason, res.message, gen, t))
		}
		switch {
		case lr.programmed:
			programmed++
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionProgrammed), true, string(gw.ListenerEntryReasonProgrammed), "", gen, t))
		case conflicted:
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionProgrammed), false, conflict.reason, conflict.message, gen, t))
		default:
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionProgrammed), false, string(gw.ListenerEntryReasonInvalid), "the listener is not served; see its other conditions", gen, t))
		}
		if conflicted {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionConflicted), true, conflict.reason, conflict.message, gen, t))
		} else {
			ls.Conditions = append(ls.Conditions, condition(string(gw.ListenerEntryConditionConflicted), false, string(gw.ListenerReasonNoConflicts), "", gen, t))
		}
		out.Listeners = append(out.Listeners, ls)
	}
	n := len(r.set.Spec.Listeners)
	notValid := string(gw.ListenerSetReasonListenersNotValid)
	switch {
	case valid == 0:
		out.Conditions = append(out.Conditions, condition(string(gw.ListenerSetConditionAccepted), false, notValid, "no listener is accepted with its references resolved", gen, t))
	case accepted == n:
		out.Conditions = append(out.Conditions, condition(string(gw.ListenerSetConditionAccepted), true, string(gw.ListenerSetReasonAccepted), "", gen, t))
	default:
		out.Conditions = append(out.Conditions, condition(string(gw.ListenerSetConditionAccepted), true, notValid,
			fmt.Sprintf("%d of %d listeners are not accepted", n-accepted, n), gen, t))
	}
	switch {
	case valid == 0:
		out.Conditions = append(out.Conditions, condition(string(gw.ListenerSetConditionProgrammed), false, notValid, ctrl+": no listener is accepted with its references resolved", gen, t))
	case programmed == 0:
		out.Conditions = append(out.Conditions, condition(string(gw.ListenerSetConditionProgrammed), false, string(gw.ListenerSetReasonInvalid), ctrl+": no listener is served", gen, t))
	default:
		out.Conditions = append(out.Conditions, condition(string(gw.ListenerSetConditionProgrammed), true, string(gw.ListenerSetReasonProgrammed),
			fmt.Sprintf("%s: %d of %d listeners served by the proxies of Gateway %s/%s", ctrl, programmed, n, r.parent.Namespace, r.parent.Name), gen, t))
	}
	return out, valid > 0
}
