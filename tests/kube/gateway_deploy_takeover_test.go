package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// The deployer takes over nothing it did not make. A Service and a
// ConfigMap named like the objects of Gateway edge (GATEWAY-CLASS)
// already exist, unlabelled: they are neither changed nor given the
// Gateway as owner (the garbage collector would delete them with it),
// nothing else of edge is deployed, and edge is Programmed False
// (NoResources) naming the object in the way, without the address of the
// Service that is not its. Moving edge to another controller's class,
// or deleting it, leaves them as they were. Beside it, Gateway plain is
// deployed and, moved to the other class, its objects (and only its) are
// removed. istiod 1.29 refuses such objects too (DeploymentController's
// canManage, pilot/pkg/config/kube/gateway/deploymentcontroller.go) but
// reports them only in a debug log.
func TestGatewayDeployTakeover(t *testing.T) {
	c, ns := newCluster(t, "gwtakeover")
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
	// The user's objects, named as edge's would be.
	name := "edge-" + class
	userSvc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"team": "payments"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "payments"},
			Ports: []corev1.ServicePort{{Name: "api", Port: 8443}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	userCM, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string]string{"settings": "mine"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns}, PodName: "wayfinder-0", PodNamespace: ns,
		Security:      bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"},
		GatewayDeploy: gatewaydeploy.Options{Image: "example.com/envoy:test"}})

	listeners := []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}
	for _, n := range []string{"edge", "plain"} {
		if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n},
			Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(class), Listeners: listeners}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := api.Gateways(ns).Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plainName := "plain-" + class
	deployed := func(what string, g *gw.Gateway) func() (string, bool) {
		return func() (string, bool) {
			sa, err1 := cs.CoreV1().ServiceAccounts(ns).Get(ctx, what, metav1.GetOptions{})
			cm, err2 := cs.CoreV1().ConfigMaps(ns).Get(ctx, what, metav1.GetOptions{})
			dep, err3 := cs.AppsV1().Deployments(ns).Get(ctx, what, metav1.GetOptions{})
			svc, err4 := cs.CoreV1().Services(ns).Get(ctx, what, metav1.GetOptions{})
			role, err5 := cs.RbacV1().Roles(ns).Get(ctx, what, metav1.GetOptions{})
			rb, err6 := cs.RbacV1().RoleBindings(ns).Get(ctx, what, metav1.GetOptions{})
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || err6 != nil {
				return fmt.Sprint(err1, err2, err3, err4, err5, err6), false
			}
			for _, o := range []metav1.Object{sa, cm, dep, svc, role, rb} {
				if !ownedBy(o, g) || !appliedBy(o) {
					return fmt.Sprintf("%s: owners %+v", o.GetName(), o.GetOwnerReferences()), false
				}
			}
			return "", true
		}
	}
	// plain's deployment shows the deployer has run over both Gateways.
	poll.Seen(t, "plain deployed", deployed(plainName, plain), apiPoll...)
	// Its ServiceAccount may list the Secrets of its namespace (what the
	// secure port's SubjectAccessReview asks of a proxy).
	poll.Seen(t, "plain's ServiceAccount may list Secrets in its namespace", func() (string, bool) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + plainName,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "secrets"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return err.Error(), false
		}
		return fmt.Sprintf("%+v", r.Status), r.Status.Allowed
	}, apiPoll...)

	untouched := func(when string) {
		t.Helper()
		svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: the user's Service: %v", when, err)
		}
		if svc.UID != userSvc.UID || svc.ResourceVersion != userSvc.ResourceVersion || len(svc.OwnerReferences) != 0 ||
			svc.Labels[gatewaydeploy.ManagedLabel] != "" || svc.Spec.Selector["app"] != "payments" || len(svc.Spec.Ports) != 1 {
			t.Errorf("%s: the user's Service was changed: uid %s rv %s (was %s), owners %+v, labels %v, selector %v, ports %+v",
				when, svc.UID, svc.ResourceVersion, userSvc.ResourceVersion, svc.OwnerReferences, svc.Labels, svc.Spec.Selector, svc.Spec.Ports)
		}
		if userCM == nil {
			return
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: the user's ConfigMap: %v", when, err)
		}
		if cm.UID != userCM.UID || cm.ResourceVersion != userCM.ResourceVersion || len(cm.OwnerReferences) != 0 || len(cm.Data) != 1 {
			t.Errorf("%s: the user's ConfigMap was changed: rv %s (was %s), owners %+v, data keys %d",
				when, cm.ResourceVersion, userCM.ResourceVersion, cm.OwnerReferences, len(cm.Data))
		}
	}
	untouched("after the deployer ran")
	// Nothing of edge is half-deployed: no pods without their bootstrap.
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("edge's Deployment: %v, want none while its ConfigMap's name is taken", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("edge's ServiceAccount: %v, want none while its ConfigMap's name is taken", err)
	}
	poll.Seen(t, "edge Programmed False, naming the ConfigMap in the way, with no address", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d, ok := condIs(g.Status.Conditions, "Programmed", metav1.ConditionFalse, "NoResources")
		c := meta.FindStatusCondition(g.Status.Conditions, "Programmed")
		return fmt.Sprintf("%s; addresses %v", d, g.Status.Addresses),
			ok && strings.Contains(c.Message, "ConfigMap "+name) && strings.Contains(c.Message, "not managed by Wayfinder") && len(g.Status.Addresses) == 0
	}, apiPoll...)

	// The ConfigMap goes: the Service is next in the way (read again
	// within the deployer's recheck interval).
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "edge's status names the Service in the way", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d, ok := condIs(g.Status.Conditions, "Programmed", metav1.ConditionFalse, "NoResources")
		c := meta.FindStatusCondition(g.Status.Conditions, "Programmed")
		return d, ok && strings.Contains(c.Message, "Service "+name)
	}, apiPoll...)
	userCM = nil // the ConfigMap is no longer checked
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("edge's ConfigMap: %v, want none while its Service's name is taken", err)
	}

	// Both moved to another controller's class: plain's objects go,
	// edge's Service in the way stays.
	for _, n := range []string{"edge", "plain"} {
		poll.Seen(t, n+" moved to the other class", func() (string, bool) {
			g, err := api.Gateways(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			g.Spec.GatewayClassName = gw.ObjectName(otherClass)
			_, err = api.Gateways(ns).Update(ctx, g, metav1.UpdateOptions{}) // retried on a conflict with a status write
			return fmt.Sprint(err), err == nil
		}, apiPoll...)
	}
	poll.Seen(t, "plain's objects removed", func() (string, bool) {
		_, err1 := cs.AppsV1().Deployments(ns).Get(ctx, plainName, metav1.GetOptions{})
		_, err2 := cs.CoreV1().Services(ns).Get(ctx, plainName, metav1.GetOptions{})
		_, err3 := cs.CoreV1().ServiceAccounts(ns).Get(ctx, plainName, metav1.GetOptions{})
		_, err4 := cs.CoreV1().ConfigMaps(ns).Get(ctx, plainName, metav1.GetOptions{})
		_, err5 := cs.RbacV1().Roles(ns).Get(ctx, plainName, metav1.GetOptions{})
		_, err6 := cs.RbacV1().RoleBindings(ns).Get(ctx, plainName, metav1.GetOptions{})
		return fmt.Sprint(err1, err2, err3, err4, err5, err6), apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && apierrors.IsNotFound(err3) &&
			apierrors.IsNotFound(err4) && apierrors.IsNotFound(err5) && apierrors.IsNotFound(err6)
	}, apiPoll...)
	untouched("after the Gateway moved to another class")
	if err := api.Gateways(ns).Delete(ctx, "edge", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || svc.UID != userSvc.UID || len(svc.OwnerReferences) != 0 {
		t.Errorf("the user's Service after edge was deleted: %v, owners %+v", err, svc.OwnerReferences)
	}
}
