package kube

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// ownedBy reports whether an object's controller is the Gateway.
func ownedBy(o metav1.Object, g *gw.Gateway) bool {
	c := metav1.GetControllerOf(o)
	return c != nil && c.Kind == "Gateway" && c.APIVersion == gw.GroupVersion.String() && c.Name == g.Name && c.UID == g.UID
}

// appliedBy reports whether the deployer's field manager server-side
// applied the object.
func appliedBy(o metav1.Object) bool {
	return slices.ContainsFunc(o.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == gatewaydeploy.FieldManager && m.Operation == metav1.ManagedFieldsOperationApply
	})
}

// Automated deployment against the API server: the leader applies a
// ServiceAccount, ConfigMap, Deployment and Service GATEWAY-CLASS owned by
// the Gateway; the Gateway is Programmed with the Service's cluster IP,
// then with its load balancer's address; a deleted or edited Deployment
// is applied again; a Gateway whose addresses name an existing Service
// gets no deployment and that Service's address; opting a Gateway out
// removes its objects; moving it to another controller's class removes
// them and puts its status back to Pending, and the route's entry of ours
// goes.
func TestGatewayDeployment(t *testing.T) {
	c, ns := newCluster(t, "gwdeploy")
	cs := c.Clientset()
	gwc, err := gwclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	api := gwc.GatewayV1()
	class, otherClass := ns+"-wf", ns+"-other"
	for name, ctrl := range map[string]gw.GatewayController{class: gatewayapi.ControllerName, otherClass: "example.com/other"} {
		if _, err := api.GatewayClasses().Create(ctx, &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gw.GatewayClassSpec{ControllerName: ctrl}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = api.GatewayClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	listeners := []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}, {Name: "db", Port: 5432, Protocol: gw.TCPProtocolType}}
	edge, err := api.Gateways(ns).Create(ctx, &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(class), Listeners: listeners}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: gw.HTTPRouteSpec{CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Service deployed by hand, which Gateway byhand names.
	manual, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns}, PodName: "wayfinder-0", PodNamespace: ns,
		Security:      bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"},
		GatewayDeploy: gatewaydeploy.Options{Image: "example.com/envoy:test"}})

	name := "edge-" + class
	poll.Seen(t, "ServiceAccount, ConfigMap, Deployment and Service applied, owned by the Gateway", func() (string, bool) {
		sa, err1 := cs.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		cm, err2 := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		dep, err3 := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		svc, err4 := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return fmt.Sprint(err1, err2, err3, err4), false
		}
		for _, o := range []metav1.Object{sa, cm, dep, svc} {
			if !ownedBy(o, edge) || !appliedBy(o) {
				return fmt.Sprintf("%s: owners %+v, managers %d", o.GetName(), o.GetOwnerReferences(), len(o.GetManagedFields())), false
			}
		}
		pod := dep.Spec.Template
		if pod.Labels[gatewayapi.GatewayNameLabel] != "edge" || pod.Spec.ServiceAccountName != name || pod.Spec.Containers[0].Image != "example.com/envoy:test" {
			return fmt.Sprintf("pod template %+v", pod), false
		}
		if cm.Data["bootstrap.yaml"] == "" || cm.Data["root-cert.pem"] == "" {
			return fmt.Sprintf("ConfigMap keys %d", len(cm.Data)), false
		}
		var ports []int32
		for _, p := range svc.Spec.Ports {
			ports = append(ports, p.Port)
		}
		return fmt.Sprintf("Service %s ports %v selector %v", svc.Spec.Type, ports, svc.Spec.Selector),
			svc.Spec.Type == corev1.ServiceTypeLoadBalancer && slices.Equal(ports, []int32{80, 5432}) && svc.Spec.Selector[gatewayapi.GatewayNameLabel] == "edge"
	}, apiPoll...)
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addressed := func(gwName, want string) func() (string, bool) {
		return func() (string, bool) {
			g, err := api.Gateways(ns).Get(ctx, gwName, metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			d, ok := condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
			return fmt.Sprintf("%s; addresses %+v", d, g.Status.Addresses),
				ok && len(g.Status.Addresses) == 1 && g.Status.Addresses[0].Value == want && *g.Status.Addresses[0].Type == gw.IPAddressType
		}
	}
	poll.Seen(t, "edge Programmed with its Service's cluster IP", addressed("edge", svc.Spec.ClusterIP), apiPoll...)

	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if _, err := cs.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "edge's address is its load balancer's", addressed("edge", "192.0.2.10"), apiPoll...)

	// Drift: a deleted Deployment comes back; an edited image is put back.
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "deleted Deployment applied again", func() (string, bool) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		return string(d.UID), d.UID != dep.UID
	}, apiPoll...)
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"envoy","image":"example.com/envoy:edited"}]}}}}`)
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "edited image put back", func() (string, bool) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		return img, img == "example.com/envoy:test"
	}, apiPoll...)

	// Opt-out: an address naming an existing Service.
	hostname := gw.HostnameAddressType
	if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "byhand"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(class), Listeners: listeners[:1],
			Addresses: []gw.GatewaySpecAddress{{Type: &hostname, Value: "manual." + ns + ".svc.cluster.local"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "byhand Programmed with the named Service's address", addressed("byhand", manual.Spec.ClusterIP), apiPoll...)

	// Opt-out by annotation: the objects go.
	poll.Seen(t, "edge opted out", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		g.Annotations = map[string]string{gatewayapi.ManagedAnnotation: "false"}
		_, err = api.Gateways(ns).Update(ctx, g, metav1.UpdateOptions{}) // retried on a conflict with a status write
		return fmt.Sprint(err), err == nil
	}, apiPoll...)
	gone := func(what string) func() (string, bool) {
		return func() (string, bool) {
			_, err1 := cs.AppsV1().Deployments(ns).Get(ctx, what, metav1.GetOptions{})
			_, err2 := cs.CoreV1().Services(ns).Get(ctx, what, metav1.GetOptions{})
			_, err3 := cs.CoreV1().ServiceAccounts(ns).Get(ctx, what, metav1.GetOptions{})
			_, err4 := cs.CoreV1().ConfigMaps(ns).Get(ctx, what, metav1.GetOptions{})
			return fmt.Sprint(err1, err2, err3, err4), apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && apierrors.IsNotFound(err3) && apierrors.IsNotFound(err4)
		}
	}
	poll.Seen(t, "opted-out edge's objects removed", gone(name), apiPoll...)
	// By now the deployer has run with byhand in its caches more than once.
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "byhand-"+class, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("byhand, whose address names a Service, was deployed (err %v)", err)
	}
	poll.Seen(t, "opted-out edge without its Service: AddressNotAssigned", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d, ok := condIs(g.Status.Conditions, "Programmed", metav1.ConditionFalse, "AddressNotAssigned")
		return fmt.Sprintf("%s; addresses %v", d, g.Status.Addresses), ok && len(g.Status.Addresses) == 0
	}, apiPoll...)

	// Moved to another controller's class: our status and route entry go.
	poll.Seen(t, "edge moved to the other class", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		g.Spec.GatewayClassName = gw.ObjectName(otherClass)
		_, err = api.Gateways(ns).Update(ctx, g, metav1.UpdateOptions{}) // retried on a conflict with a status write
		return fmt.Sprint(err), err == nil
	}, apiPoll...)
	poll.Seen(t, "edge's status back to Pending, route entry of ours removed", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		r, err := api.HTTPRoutes(ns).Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d1, ok1 := condIs(g.Status.Conditions, "Programmed", metav1.ConditionUnknown, "Pending")
		d2, ok2 := condIs(g.Status.Conditions, "Accepted", metav1.ConditionUnknown, "Pending")
		return fmt.Sprintf("%s; %s; listeners %d; route parents %+v", d1, d2, len(g.Status.Listeners), r.Status.Parents),
			ok1 && ok2 && len(g.Status.Listeners) == 0 && len(g.Status.Addresses) == 0 && len(r.Status.Parents) == 0
	}, apiPoll...)
}

// The deployer against the API server's defaulting: once its objects
// are applied and seen by its informers, a pass writes nothing, however
// often it runs (what the API server adds is not drift).
func TestGatewayDeployerSteadyState(t *testing.T) {
	c, ns := newCluster(t, "gwdeploy-steady")
	gwc, err := gwclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	class := &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-wf"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}
	g, err := gwc.GatewayV1().Gateways(ns).Create(ctx, &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(class.Name), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}, {Name: "db", Port: 5432, Protocol: gw.TCPProtocolType}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kclient.New(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	d, err := gatewaydeploy.New(gatewaydeploy.DeployerOptions{Kube: kc.Kube, Namespaces: []string{ns},
		Input: func() (gatewayapi.Input, error) {
			return gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}}, nil
		},
		Render: gatewaydeploy.Options{XDSAddress: "pilot-discovery.wayfinder-system.svc:15012", RootCertPEM: []byte("root")}})
	if err != nil {
		t.Fatal(err)
	}
	go d.Run(ctx)
	always := func() bool { return true }
	poll.Seen(t, "all six applied, then a pass with nothing to write", func() (string, bool) {
		n, err := d.Sync(ctx, always)
		return fmt.Sprintf("%d writes (%v), %d applies in all", n, err, d.Applies()), err == nil && n == 0 && d.Applies() >= 6
	}, apiPoll...)
	applies := d.Applies()
	for range 5 {
		if n, err := d.Sync(ctx, always); n != 0 || err != nil {
			t.Fatalf("steady state: a pass wrote %d objects (%v)", n, err)
		}
	}
	if d.Applies() != applies || applies != 6 {
		t.Errorf("applies %d then %d, want 6: each object applied once", applies, d.Applies())
	}
}
