package gatewayapi_test

import (
	"context"
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	kubegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// A Namespace labelled after start changes the generated Gateway's hosts:
// the controller watches Namespaces and converts again.
func TestControllerFollowsNamespaceLabels(t *testing.T) {
	ctx := context.Background()
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	kube := fake.NewClientset(webService, team, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge-ns"}})
	serve(kube, "gatewayclasses", "gateways", "httproutes")
	client := newClient(t)
	sel := gw.NamespacesFromSelector
	selected := edge.DeepCopy()
	selected.Spec.Listeners[0].AllowedRoutes = &gw.AllowedRoutes{Namespaces: &gw.RouteNamespaces{From: &sel,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"edge-access": "yes"}}}}
	if _, err := client.GatewayV1().Gateways("edge-ns").Update(ctx, selected, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, events := runController(t, kubegatewayapi.ControllerOptions{Client: kclienttest.GatewayAPI(client), Kube: kclienttest.Kube(kube)})
	expect(t, events, "add Gateway edge-ns/edge-http-gwapi")
	hosts := func() []string {
		g := c.Get(schema.Gateway, "edge-ns", "edge-http-gwapi")
		if g == nil {
			return nil
		}
		return g.Spec.(*networking.Gateway).GetServers()[0].GetHosts()
	}
	if got := hosts(); !slices.Equal(got, []string{"edge-ns/*"}) {
		t.Fatalf("hosts before the label: %v", got)
	}
	team = team.DeepCopy()
	team.Labels = map[string]string{"edge-access": "yes"}
	if _, err := kube.CoreV1().Namespaces().Update(ctx, team, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "update Gateway edge-ns/edge-http-gwapi")
	if got, want := hosts(), []string{"edge-ns/*", "team-a/*"}; !slices.Equal(got, want) {
		t.Errorf("hosts once team-a is labelled: %v, want %v", got, want)
	}
	// And back: the label removed takes team-a out again.
	team.Labels = nil
	if _, err := kube.CoreV1().Namespaces().Update(ctx, team, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "update Gateway edge-ns/edge-http-gwapi")
	if got := hosts(); !slices.Equal(got, []string{"edge-ns/*"}) {
		t.Errorf("hosts once the label is gone: %v", got)
	}
}
