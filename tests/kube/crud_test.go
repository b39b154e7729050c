package kube

import (
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Every kind, created, updated and deleted through the API server, reaches
// the gateway.
func TestCreateUpdateDeleteEveryKindReachesTheGateway(t *testing.T) {
	e := newEnv(t, "crud")
	gw := e.gateway("gw-0")
	host := e.host("reviews")
	c9080 := model.ClusterName(9080, "", host)
	c9080v1 := model.ClusterName(9080, "v1", host)
	c9080v2 := model.ClusterName(9080, "v2", host)

	// Create.
	e.createGateway("gw")
	e.createVS(e.virtualService("bookinfo", "bookinfo.example.com", host, "v1"))
	_, err := e.istio.NetworkingV1().DestinationRules(e.ns).Create(ctx, &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "reviews"},
		Spec: networking.DestinationRule{Host: host, Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}}, {Name: "v2", Labels: map[string]string{"version": "v2"}}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = e.istio.NetworkingV1().ServiceEntries(e.ns).Create(ctx, &networkingv1.ServiceEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "ext"},
		Spec: networking.ServiceEntry{Hosts: []string{"api.example.com"}, Resolution: networking.ServiceEntry_DNS,
			Ports: []*networking.ServicePort{{Number: 443, Name: "tls", Protocol: "TLS"}}},
	}, metav1.CreateOptions{})
	e.must(err)
	e.createPod("reviews-v1", map[string]string{"app": "reviews", "version": "v1"})
	e.createPod("reviews-v2", map[string]string{"app": "reviews", "version": "v2"})
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.1.0.1", "reviews-v1", true}, ep{"10.1.0.2", "reviews-v2", true})

	s := waitFor(t, gw, "everything created", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_80"] != nil && virtualHost(s, "bookinfo.example.com", c9080v1) &&
			endpointCount(s, c9080) == 2 && endpointCount(s, c9080v1) == 1 && endpointCount(s, c9080v2) == 1 &&
			s.Clusters[model.ClusterName(443, "", "api.example.com")] != nil
	})
	// The named target port "web" resolved through the EndpointSlice.
	lb := s.Endpoints[c9080v1].GetEndpoints()[0].GetLbEndpoints()[0]
	if a := lb.GetEndpoint().GetAddress().GetSocketAddress(); a.GetAddress() != "10.1.0.1" || a.GetPortValue() != 8080 {
		t.Fatalf("v1 endpoint = %v, want 10.1.0.1:8080 (pod labels select the subset, named port resolved)", a)
	}

	// Update each.
	// Each read-modify-write is retried on a conflict with a status write.
	e.update(func() error {
		vs, err := e.istio.NetworkingV1().VirtualServices(e.ns).Get(ctx, "bookinfo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		vs.Spec.Http[0].Route[0].Destination.Subset = "v2"
		_, err = e.istio.NetworkingV1().VirtualServices(e.ns).Update(ctx, vs, metav1.UpdateOptions{})
		return err
	})
	e.update(func() error {
		dr, err := e.istio.NetworkingV1().DestinationRules(e.ns).Get(ctx, "reviews", metav1.GetOptions{})
		if err != nil {
			return err
		}
		dr.Spec.Subsets = append(dr.Spec.Subsets, &networking.Subset{Name: "v3", Labels: map[string]string{"version": "v3"}})
		_, err = e.istio.NetworkingV1().DestinationRules(e.ns).Update(ctx, dr, metav1.UpdateOptions{})
		return err
	})
	e.update(func() error {
		se, err := e.istio.NetworkingV1().ServiceEntries(e.ns).Get(ctx, "ext", metav1.GetOptions{})
		if err != nil {
			return err
		}
		se.Spec.Hosts = append(se.Spec.Hosts, "api2.example.com")
		_, err = e.istio.NetworkingV1().ServiceEntries(e.ns).Update(ctx, se, metav1.UpdateOptions{})
		return err
	})
	e.update(func() error {
		g, err := e.istio.NetworkingV1().Gateways(e.ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Spec.Servers = append(g.Spec.Servers, &networking.Server{Port: &networking.Port{Number: 8080, Name: "http-alt", Protocol: "HTTP"}, Hosts: []string{"*"}})
		_, err = e.istio.NetworkingV1().Gateways(e.ns).Update(ctx, g, metav1.UpdateOptions{})
		return err
	})
	svc, err := e.kube.CoreV1().Services(e.ns).Get(ctx, "reviews", metav1.GetOptions{})
	e.must(err)
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "grpc", Port: 9090})
	_, err = e.kube.CoreV1().Services(e.ns).Update(ctx, svc, metav1.UpdateOptions{})
	e.must(err)
	e.applySlice("reviews", "reviews-1", ep{"10.1.0.1", "reviews-v1", true}, ep{"10.1.0.2", "reviews-v2", true}, ep{"10.1.0.3", "", true})

	waitFor(t, gw, "everything updated", func(s adsc.State) bool {
		return virtualHost(s, "bookinfo.example.com", c9080v2) && !virtualHost(s, "bookinfo.example.com", c9080v1) &&
			s.Clusters[model.ClusterName(9080, "v3", host)] != nil &&
			s.Clusters[model.ClusterName(443, "", "api2.example.com")] != nil &&
			s.Listeners["0.0.0.0_8080"] != nil &&
			s.Clusters[model.ClusterName(9090, "", host)] != nil &&
			endpointCount(s, c9080) == 3
	})

	// Delete each.
	e.must(e.istio.NetworkingV1().VirtualServices(e.ns).Delete(ctx, "bookinfo", metav1.DeleteOptions{}))
	e.must(e.istio.NetworkingV1().DestinationRules(e.ns).Delete(ctx, "reviews", metav1.DeleteOptions{}))
	e.must(e.istio.NetworkingV1().ServiceEntries(e.ns).Delete(ctx, "ext", metav1.DeleteOptions{}))
	e.must(e.kube.DiscoveryV1().EndpointSlices(e.ns).Delete(ctx, "reviews-1", metav1.DeleteOptions{}))
	waitFor(t, gw, "config and endpoints deleted", func(s adsc.State) bool {
		return !virtualHost(s, "bookinfo.example.com", "") && s.Clusters[c9080v1] == nil &&
			s.Clusters[model.ClusterName(443, "", "api.example.com")] == nil && s.Clusters[c9080] != nil && endpointCount(s, c9080) == 0
	})
	e.must(e.kube.CoreV1().Services(e.ns).Delete(ctx, "reviews", metav1.DeleteOptions{}))
	e.must(e.istio.NetworkingV1().Gateways(e.ns).Delete(ctx, "gw", metav1.DeleteOptions{}))
	waitFor(t, gw, "service and gateway deleted", func(s adsc.State) bool {
		return s.Clusters[c9080] == nil && s.Listeners["0.0.0.0_80"] == nil
	})
	for _, k := range schema.Kinds() {
		if got := e.server.Store().List(k, e.ns); len(got) != 0 {
			t.Errorf("%s left in the store: %v", k, got)
		}
	}
}

// An object the CRD schema accepts but validation rejects is not served,
// gets a Warning Event, and does not stop anything else.
func TestInvalidObjectGetsAnEventAndOthersAreServed(t *testing.T) {
	e := newEnv(t, "invalid")
	gw := e.gateway("gw-0")
	events, err := e.kube.CoreV1().Events(e.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "bad").String()})
	e.must(err)
	defer events.Stop()

	e.createGateway("gw")
	bad := e.virtualService("bad", "bad.example.com", "x.example.com", "")
	bad.Spec.Http[0].Route[0].Weight = -10
	e.createVS(bad)
	e.createVS(e.virtualService("good", "good.example.com", "x.example.com", ""))

	waitFor(t, gw, "the valid VirtualService", func(s adsc.State) bool { return virtualHost(s, "good.example.com", "") })
	if virtualHost(gw.State(), "bad.example.com", "") {
		t.Fatal("the invalid VirtualService is served")
	}
	var ev *corev1.Event
	timeout := timeAfter()
	for ev == nil {
		select {
		case we := <-events.ResultChan():
			if we.Type == watch.Added {
				ev = we.Object.(*corev1.Event)
			}
		case <-timeout:
			t.Fatal("no Event recorded on the invalid VirtualService")
		}
	}
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "InvalidConfig" || ev.InvolvedObject.Kind != "VirtualService" ||
		!strings.Contains(ev.Message, "weight") {
		t.Errorf("event = %s %s %s: %q", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.Message)
	}
	errs := e.server.Store().(model.ConfigErrorReporter).ConfigErrors()
	if !slices.ContainsFunc(errs, func(err *configError) bool { return err.Key.Name == "bad" && strings.Contains(err.Field, "weight") }) {
		t.Errorf("ConfigErrors = %v, want one naming the weight of bad", errs)
	}
}
