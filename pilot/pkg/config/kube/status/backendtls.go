package status

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// maxAncestors is the most entries status.ancestors may hold (the CRD's
// maxItems): other controllers' entries come first and are never dropped
// for ours.
const maxAncestors = 16

// syncBackendTLS writes the status.ancestors of BackendTLSPolicies: the
// entries whose controllerName is Wayfinder's are replaced by the
// computed ones (transition times kept while a condition holds), other
// controllers' entries are kept as they are, in place. A policy no
// Gateway of Wayfinder reaches loses Wayfinder's entries.
func (g *GatewayAPIStatus) syncBackendTLS(ctx context.Context, in gatewayapi.Input, st gatewayapi.Status, ctrl gw.GatewayController,
	write func(key, rv string, same bool, update func() error)) {
	api := g.opts.Client.GatewayV1()
	for _, o := range in.BackendTLSPolicies {
		ours := st.BackendTLSPolicies[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}].Ancestors
		want := mergeAncestors(o.Status.Ancestors, ours, ctrl)
		write("BackendTLSPolicy/"+o.Namespace+"/"+o.Name, o.ResourceVersion, apiequality.Semantic.DeepEqual(want, o.Status.Ancestors), func() error {
			cp := o.DeepCopy()
			cp.Status.Ancestors = want
			_, err := api.BackendTLSPolicies(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
}

// mergeAncestors keeps the entries of other controllers in place and puts
// ours after them, each with the transition times of the entry it
// replaces, up to maxAncestors. Nil stays nil when there is nothing.
func mergeAncestors(cur, ours []gw.PolicyAncestorStatus, ctrl gw.GatewayController) []gw.PolicyAncestorStatus {
	var out []gw.PolicyAncestorStatus
	for _, a := range cur {
		if a.ControllerName != ctrl {
			out = append(out, a)
		}
	}
	for _, a := range ours {
		if len(out) >= maxAncestors {
			break
		}
		for _, c := range cur {
			if c.ControllerName == ctrl && apiequality.Semantic.DeepEqual(c.AncestorRef, a.AncestorRef) {
				a.Conditions = keepTimes(a.Conditions, c.Conditions)
			}
		}
		out = append(out, a)
	}
	if len(out) == 0 && cur != nil {
		return cur[:0]
	}
	return out
}
