package kube

import (
	"testing"

	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	knetworking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// With --domain-suffix example.internal in Kubernetes mode, Services are
// NAME.NAMESPACE.svc.example.internal, and short names reach them from a
// VirtualService's HTTP and TCP destinations and from an Ingress backend.
func TestDomainSuffixKube(t *testing.T) {
	c, ns := newCluster(t, "suffix")
	e := clientEnv(t, c, ns)
	var err error
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		DomainSuffix: "example.internal", Ingress: bootstrap.IngressOptions{Class: ns}})

	e.createService("reviews")
	_, err = e.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 5432}}},
	}, metav1.CreateOptions{})
	e.must(err)
	gw := e.gatewayObj("gw")
	gw.Spec.Servers = append(gw.Spec.Servers, &networking.Server{Port: &networking.Port{Number: 31400, Name: "tcp", Protocol: "TCP"}, Hosts: []string{"*"}})
	_, err = e.istio.NetworkingV1().Gateways(ns).Create(ctx, gw, metav1.CreateOptions{})
	e.must(err)
	e.createVS(e.virtualService("web", "vs.example.com", "reviews", ""))
	e.createVS(&networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"gw"}, Tcp: []*networking.TCPRoute{{
			Match: []*networking.L4MatchAttributes{{Port: 31400}},
			Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "db"}}},
		}}},
	})
	_, err = e.kube.NetworkingV1().Ingresses(ns).Create(ctx, &knetworking.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", Annotations: map[string]string{"kubernetes.io/ingress.class": ns}},
		Spec: knetworking.IngressSpec{Rules: []knetworking.IngressRule{{Host: "ing.example.com", IngressRuleValue: knetworking.IngressRuleValue{
			HTTP: &knetworking.HTTPIngressRuleValue{Paths: []knetworking.HTTPIngressPath{{
				PathType: ptr.To(knetworking.PathTypePrefix), Path: "/",
				Backend: knetworking.IngressBackend{Service: &knetworking.IngressServiceBackend{Name: "reviews", Port: knetworking.ServiceBackendPort{Number: 9080}}},
			}}},
		}}}},
	}, metav1.CreateOptions{})
	e.must(err)

	reviews := "outbound|9080||reviews." + ns + ".svc.example.internal"
	db := "outbound|5432||db." + ns + ".svc.example.internal"
	tcpCluster := func(s adsc.State) string {
		for _, fc := range s.Listeners["0.0.0.0_31400"].GetFilterChains() {
			for _, f := range fc.GetFilters() {
				tp := &tcpv3.TcpProxy{}
				if f.GetTypedConfig().UnmarshalTo(tp) == nil {
					return tp.GetCluster()
				}
			}
		}
		return ""
	}
	waitFor(t, e.gateway("gw-1"), "short names under example.internal", func(s adsc.State) bool {
		return virtualHost(s, "vs.example.com", reviews) && virtualHost(s, "ing.example.com", reviews) && tcpCluster(s) == db &&
			s.Clusters[reviews] != nil && s.Clusters[db] != nil
	})
}
