package gatewayapi_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

func TestDeploymentNameAndOptOut(t *testing.T) {
	hostname, ip := gw.HostnameAddressType, gw.IPAddressType
	g := func(ann map[string]string, addrs ...gw.GatewaySpecAddress) *gw.Gateway {
		return &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge", Annotations: ann},
			Spec: gw.GatewaySpec{GatewayClassName: "wayfinder", Addresses: addrs}}
	}
	cases := []struct {
		name          string
		gw            *gw.Gateway
		managed       bool
		svcNS, svcNam string
	}{
		{"default", g(nil), true, "edge-ns", "edge-wayfinder"},
		{"annotation", g(map[string]string{gatewayapi.ManagedAnnotation: "false"}), false, "edge-ns", "edge-wayfinder"},
		{"annotation true", g(map[string]string{gatewayapi.ManagedAnnotation: "true"}), true, "edge-ns", "edge-wayfinder"},
		{"IP address", g(nil, gw.GatewaySpecAddress{Type: &ip, Value: "192.0.2.1"}), true, "edge-ns", "edge-wayfinder"},
		{"bare name", g(nil, gw.GatewaySpecAddress{Type: &hostname, Value: "lb"}), false, "edge-ns", "lb"},
		{"name.namespace", g(nil, gw.GatewaySpecAddress{Type: &hostname, Value: "lb.infra"}), false, "infra", "lb"},
		{"FQDN", g(nil, gw.GatewaySpecAddress{Type: &hostname, Value: "lb.infra.svc.cluster.local"}), false, "infra", "lb"},
		{"svc", g(nil, gw.GatewaySpecAddress{Type: &hostname, Value: "lb.infra.svc"}), false, "infra", "lb"},
		{"outside the cluster", g(nil, gw.GatewaySpecAddress{Type: &hostname, Value: "lb.example.com"}), false, "", ""},
	}
	for _, tc := range cases {
		if got := gatewayapi.Managed(tc.gw); got != tc.managed {
			t.Errorf("%s: Managed %v, want %v", tc.name, got, tc.managed)
		}
		if ns, n := gatewayapi.GatewayService(tc.gw, "cluster.local"); ns != tc.svcNS || n != tc.svcNam {
			t.Errorf("%s: Service %s/%s, want %s/%s", tc.name, ns, n, tc.svcNS, tc.svcNam)
		}
	}
}

func TestServiceAddresses(t *testing.T) {
	lb := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1", "fd00::1"}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "192.0.2.1"}, {Hostname: "lb.example.com"}, {IP: "192.0.2.1"}}}}}
	got := gatewayapi.ServiceAddresses(lb)
	if len(got) != 2 || got[0].Value != "192.0.2.1" || *got[0].Type != gw.IPAddressType ||
		got[1].Value != "lb.example.com" || *got[1].Type != gw.HostnameAddressType {
		t.Errorf("load balancer addresses %+v, want its IP then its hostname, once each", got)
	}
	lb.Status = corev1.ServiceStatus{}
	if got := gatewayapi.ServiceAddresses(lb); len(got) != 2 || got[0].Value != "10.0.0.1" || got[1].Value != "fd00::1" {
		t.Errorf("pending load balancer: %+v, want the cluster IPs", got)
	}
	headless := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	if got := gatewayapi.ServiceAddresses(headless); len(got) != 0 {
		t.Errorf("headless: %+v, want none", got)
	}
}

// Programmed waits for the address: False AddressNotAssigned until the
// Gateway's Service has one, then True with status.addresses; an address
// naming another Service takes that Service's.
func TestProgrammedNeedsAnAddress(t *testing.T) {
	hostname := gw.HostnameAddressType
	services := map[string]*corev1.Service{}
	in := gatewayapi.Input{
		GatewayClasses: []*gw.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}},
		Gateways: []*gw.Gateway{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "edge", Generation: 2}, Spec: gw.GatewaySpec{GatewayClassName: "wayfinder",
				Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "byhand", Generation: 1}, Spec: gw.GatewaySpec{GatewayClassName: "wayfinder",
				Addresses: []gw.GatewaySpecAddress{{Type: &hostname, Value: "manual"}},
				Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}}},
		},
		Services: func(ns, name string) *corev1.Service { return services[ns+"/"+name] },
	}
	status := func(name string) gw.GatewayStatus {
		return gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, time.Unix(0, 0)).Status.Gateways[types.NamespacedName{Namespace: "ns", Name: name}]
	}
	st := status("edge")
	wantCond(t, "edge without a Service", st.Conditions, "Programmed", metav1.ConditionFalse, "AddressNotAssigned", 2)
	if len(st.Addresses) != 0 {
		t.Errorf("addresses %+v without a Service", st.Addresses)
	}
	services["ns/edge-wayfinder"] = &corev1.Service{}
	wantCond(t, "edge with a Service without address", status("edge").Conditions, "Programmed", metav1.ConditionFalse, "AddressNotAssigned", 2)
	services["ns/edge-wayfinder"] = &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
		Ingress: []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}}}}
	st = status("edge")
	wantCond(t, "edge", st.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 2)
	if len(st.Addresses) != 1 || st.Addresses[0].Value != "lb.example.com" {
		t.Errorf("addresses %+v, want the load balancer's hostname", st.Addresses)
	}
	wantCond(t, "byhand before its Service", status("byhand").Conditions, "Programmed", metav1.ConditionFalse, "AddressNotAssigned", 1)
	services["ns/manual"] = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.1.2.3"}}
	st = status("byhand")
	wantCond(t, "byhand", st.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 1)
	if len(st.Addresses) != 1 || st.Addresses[0].Value != "10.1.2.3" {
		t.Errorf("addresses %+v, want Service manual's cluster IP", st.Addresses)
	}
}
