package status

import (
	"context"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// syncListenerSets writes the status of the ListenerSets whose parent is a
// Gateway of Wayfinder's (gatewayapi's listenerSetStatus): conditions and
// per-listener status, transition times kept while a condition holds. A
// ListenerSet that stops being ours (its parentRef changed, its Gateway
// went to another class or away) and still carries Wayfinder's Programmed
// condition goes back to the CRD's Pending default, as a Gateway does.
func (g *GatewayAPIStatus) syncListenerSets(ctx context.Context, in gatewayapi.Input, st gatewayapi.Status, ctrl gw.GatewayController,
	write func(key, rv string, same bool, update func() error)) {
	api := g.opts.Client.GatewayV1()
	for _, o := range in.ListenerSets {
		want, ok := st.ListenerSets[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}]
		if !ok {
			if !listenerSetWasOurs(o, ctrl) {
				continue
			}
			want = gw.ListenerSetStatus{Conditions: pendingConditions(o.Generation,
				gw.GatewayClassConditionType(gw.ListenerSetConditionAccepted), gw.GatewayClassConditionType(gw.ListenerSetConditionProgrammed))}
		}
		want.Conditions = keepTimes(want.Conditions, o.Status.Conditions)
		want.Listeners = keepListenerTimes(want.Listeners, o.Status.Listeners, setListener)
		write("ListenerSet/"+o.Namespace+"/"+o.Name, o.ResourceVersion, apiequality.Semantic.DeepEqual(want, o.Status), func() error {
			cp := o.DeepCopy()
			cp.Status = want
			_, err := api.ListenerSets(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
}

// listenerSetWasOurs reports whether a ListenerSet's Programmed condition
// was written by controller ctrl (its message starts with the name).
func listenerSetWasOurs(ls *gw.ListenerSet, ctrl gw.GatewayController) bool {
	for _, c := range ls.Status.Conditions {
		if c.Type == string(gw.ListenerSetConditionProgrammed) && strings.HasPrefix(c.Message, string(ctrl)+": ") {
			return true
		}
	}
	return false
}
