package soak

import (
	"context"
	"fmt"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

// secretName is the TLS Secret the Gateway's HTTPS server names; it is
// deleted and recreated during the soak, so port 443 comes and goes.
const secretName = "soak-cert"

// workload is what the soak writes into one namespace and the config every
// gateway must end up with: per Service its number of ready endpoints,
// per VirtualService the Service it routes to, and whether the Secret
// exists (then, and only then, the HTTPS listener is served).
type workload struct {
	kube      kubernetes.Interface
	istio     istioclient.Interface
	ns        string
	cert, key []byte

	endpoints []int // per Service: ready endpoints, 1 to 3
	routes    []int // per VirtualService: index of the Service it routes to
	secret    bool
}

func (w *workload) host(svc int) string {
	return fmt.Sprintf("svc-%d.%s.svc.cluster.local", svc, w.ns)
}

func (w *workload) cluster(svc int) string { return model.ClusterName(9080, "", w.host(svc)) }

func vsHost(vs int) string { return fmt.Sprintf("app-%d.example.com", vs) }

// setup writes the Gateway, the Services with their EndpointSlices, the
// VirtualServices and the Secret.
func (w *workload) setup(ctx context.Context) error {
	gw := &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "gw"},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
			{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*"}},
			{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"}, Hosts: []string{"*"},
				Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: secretName}},
		}},
	}
	if _, err := w.istio.NetworkingV1().Gateways(w.ns).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := range w.endpoints {
		svc := objects.Service(w.ns, fmt.Sprintf("svc-%d", i), corev1.ServicePort{Name: "http", Port: 9080, TargetPort: intstr.FromInt32(8080)})
		if _, err := w.kube.CoreV1().Services(w.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		w.endpoints[i] = 1
		if err := w.setEndpoints(ctx, i, 1+i%3); err != nil {
			return err
		}
	}
	for j := range w.routes {
		if _, err := w.istio.NetworkingV1().VirtualServices(w.ns).Create(ctx, w.virtualService(j, j%len(w.endpoints)), metav1.CreateOptions{}); err != nil {
			return err
		}
		w.routes[j] = j % len(w.endpoints)
	}
	return w.setSecret(ctx, true)
}

// setEndpoints replaces Service svc's EndpointSlice with n ready endpoints.
func (w *workload) setEndpoints(ctx context.Context, svc, n int) error {
	name := fmt.Sprintf("svc-%d-1", svc)
	es := objects.EndpointSlice(w.ns, fmt.Sprintf("svc-%d", svc), name, []discoveryv1.EndpointPort{objects.TCPPort("http", 8080)})
	for k := range n {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 10+svc/250, svc%250, 1+k)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	slices := w.kube.DiscoveryV1().EndpointSlices(w.ns)
	cur, err := slices.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, es, metav1.CreateOptions{})
	case err == nil:
		es.ResourceVersion = cur.ResourceVersion
		_, err = slices.Update(ctx, es, metav1.UpdateOptions{})
	}
	if err == nil {
		w.endpoints[svc] = n
	}
	return err
}

func (w *workload) virtualService(vs, svc int) *networkingv1.VirtualService {
	return &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: fmt.Sprintf("app-%d", vs)},
		Spec: networking.VirtualService{Hosts: []string{vsHost(vs)}, Gateways: []string{"gw"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: w.host(svc), Port: &networking.PortSelector{Number: 9080}}}},
		}}},
	}
}

// setRoute points VirtualService vs at Service svc.
func (w *workload) setRoute(ctx context.Context, vs, svc int) error {
	vss := w.istio.NetworkingV1().VirtualServices(w.ns)
	// The server writes the VirtualService's status meanwhile: a conflict
	// means read again and retry.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := vss.Get(ctx, fmt.Sprintf("app-%d", vs), metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := w.virtualService(vs, svc)
		next.ResourceVersion = cur.ResourceVersion
		_, err = vss.Update(ctx, next, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return err
	}
	w.routes[vs] = svc
	return nil
}

// setSecret creates (present) or deletes the Gateway's TLS Secret.
func (w *workload) setSecret(ctx context.Context, present bool) error {
	secrets := w.kube.CoreV1().Secrets(w.ns)
	var err error
	if present {
		_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: w.cert, corev1.TLSPrivateKeyKey: w.key}}, metav1.CreateOptions{})
	} else {
		err = secrets.Delete(ctx, secretName, metav1.DeleteOptions{})
	}
	if err == nil {
		w.secret = present
	}
	return err
}

// converged reports whether s is the workload's current config: every
// Service's endpoints, every VirtualService's route on port 80, and the
// HTTPS listener exactly while the Secret exists.
func (w *workload) converged(s adsc.State) bool {
	for i, n := range w.endpoints {
		if endpointCount(s, w.cluster(i)) != n {
			return false
		}
	}
	for j, svc := range w.routes {
		if !routesTo(s, vsHost(j), w.cluster(svc)) {
			return false
		}
	}
	return (s.Listeners["0.0.0.0_443"] != nil) == w.secret && s.Listeners["0.0.0.0_80"] != nil
}

// mismatch names the first way s differs from the workload, for failures.
func (w *workload) mismatch(s adsc.State) string {
	for i, n := range w.endpoints {
		if got := endpointCount(s, w.cluster(i)); got != n {
			return fmt.Sprintf("%s has %d endpoints, want %d", w.cluster(i), got, n)
		}
	}
	for j, svc := range w.routes {
		if !routesTo(s, vsHost(j), w.cluster(svc)) {
			return fmt.Sprintf("virtual host %s:80 does not route to %s", vsHost(j), w.cluster(svc))
		}
	}
	if (s.Listeners["0.0.0.0_443"] != nil) != w.secret {
		return fmt.Sprintf("listener 0.0.0.0_443 present=%v, want %v (Secret exists)", s.Listeners["0.0.0.0_443"] != nil, w.secret)
	}
	if s.Listeners["0.0.0.0_80"] == nil {
		return "no listener 0.0.0.0_80"
	}
	return "converged"
}

func endpointCount(s adsc.State, cluster string) int {
	cla, ok := s.Endpoints[cluster]
	if !ok {
		return -1
	}
	n := 0
	for _, l := range cla.GetEndpoints() {
		n += len(l.GetLbEndpoints())
	}
	return n
}

// routesTo reports whether route config http.80 sends host:80 to cluster.
func routesTo(s adsc.State, host, cluster string) bool {
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() != host+":80" {
			continue
		}
		for _, r := range vh.GetRoutes() {
			if r.GetRoute().GetCluster() == cluster {
				return true
			}
		}
	}
	return false
}
