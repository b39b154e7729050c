package kube

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// On a real API server, an EnvoyFilter applied to a connected gateway
// gets the Patched condition: per patch what it matched and changed; a
// patch that matches nothing turns it False naming the patch, so a
// renamed filter shows on the object. The gateway keeps everything else.
func TestEnvoyFilterPatchedStatus(t *testing.T) {
	c, ns := newCluster(t, "efstatus")
	e := clientEnv(t, c, ns)
	e.createGateway("gw")
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})
	value, err := structpb.NewStruct(map[string]any{"per_connection_buffer_limit_bytes": 32768})
	e.must(err)
	efs := e.istio.NetworkingV1alpha3().EnvoyFilters(ns)
	_, err = efs.Create(ctx, &networkingv1alpha3.EnvoyFilter{
		ObjectMeta: metav1.ObjectMeta{Name: "buffers"},
		Spec: networkingapi.EnvoyFilter{
			WorkloadSelector: &networkingapi.WorkloadSelector{Labels: map[string]string{"istio": "ingressgateway"}},
			ConfigPatches: []*networkingapi.EnvoyFilter_EnvoyConfigObjectPatch{{
				ApplyTo: networkingapi.EnvoyFilter_LISTENER,
				Match: &networkingapi.EnvoyFilter_EnvoyConfigObjectMatch{Context: networkingapi.EnvoyFilter_GATEWAY,
					ObjectTypes: &networkingapi.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &networkingapi.EnvoyFilter_ListenerMatch{PortNumber: 80}}},
				Patch: &networkingapi.EnvoyFilter_Patch{Operation: networkingapi.EnvoyFilter_Patch_MERGE, Value: value},
			}, {
				ApplyTo: networkingapi.EnvoyFilter_LISTENER,
				Match: &networkingapi.EnvoyFilter_EnvoyConfigObjectMatch{Context: networkingapi.EnvoyFilter_GATEWAY,
					ObjectTypes: &networkingapi.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &networkingapi.EnvoyFilter_ListenerMatch{PortNumber: 9999}}},
				Patch: &networkingapi.EnvoyFilter_Patch{Operation: networkingapi.EnvoyFilter_Patch_MERGE, Value: value},
			}},
		},
	}, metav1.CreateOptions{})
	e.must(err)

	ctx2, cancel := contextWithTimeout()
	defer cancel()
	proxy, err := adsc.Dial(ctx2, adsc.Config{Address: e.server.GRPCAddr().String(),
		Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: "gw-1", Namespace: ns, Labels: map[string]string{"istio": "ingressgateway"}})})
	e.must(err)
	t.Cleanup(func() { proxy.Close() })
	waitFor(t, proxy, "the patched listener", func(s adsc.State) bool {
		l := s.Listeners["0.0.0.0_80"]
		return l.GetPerConnectionBufferLimitBytes().GetValue() == 32768
	})
	poll.Seen(t, "the Patched condition naming both patches", func() (string, bool) {
		o, err := efs.Get(ctx, "buffers", metav1.GetOptions{})
		e.must(err)
		v := conditionOf(o.Status.GetConditions(), status.ConditionPatched)
		return v, strings.HasPrefix(v, "False/NotApplied") &&
			strings.Contains(v, "spec.configPatches[0] LISTENER MERGE: changed 1 of 1 matched") &&
			strings.Contains(v, "spec.configPatches[1] LISTENER MERGE: matched nothing")
	}, apiPoll...)
}
