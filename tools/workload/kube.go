package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The Kubernetes form of the scenario (WriteKube): instead of
// ServiceEntries, N Services svc-i in namespace default (port 8080 "http")
// with one EndpointSlice each of E ready endpoints, one DestinationRule per
// Service, and the same Gateway and VirtualServices. The hosts the
// VirtualServices route to are the Services' cluster-local names, which are
// ServiceHost(i), so the routes are those of the file form.
//
// The API server refuses loopback endpoint addresses, so endpoints are in
// 10.0.0.0/10 (KubeEndpointAddress) and the markers an endpoint-churn
// benchmark writes are in 10.64.0.0/10 and above (MarkerAddress). Both are
// only config: nothing ever dials them.
const (
	// ServiceNamespace holds the Services, EndpointSlices, VirtualServices
	// and DestinationRules; GatewayNamespace the Gateway.
	ServiceNamespace = "default"
	GatewayNamespace = "istio-system"
	// ServicePort is every Service's port, named "http".
	ServicePort = 8080
	// maxKubeEndpoints and maxMarker bound the two address ranges.
	maxKubeEndpoints = 64 << 16
	maxMarker        = 192 << 16
)

// ServiceName is the name of Service i (and of its DestinationRule).
func ServiceName(i int) string { return fmt.Sprintf("svc-%d", i) }

// EndpointSliceName is the name of Service i's EndpointSlice.
func EndpointSliceName(i int) string { return fmt.Sprintf("svc-%d-0", i) }

// KubeEndpointAddress is endpoint j of Service i when each has e: 10.a.b.c
// below 10.64.0.0.
func KubeEndpointAddress(i, j, e int) string {
	idx := i*e + j
	return fmt.Sprintf("10.%d.%d.%d", idx>>16, (idx>>8)&255, idx&255)
}

// MarkerAddress is the address an endpoint-churn benchmark writes for
// change k, so that a gateway's EDS response tells which change it carries.
// k must be below 192<<16 (12.5 million changes).
func MarkerAddress(k int) string {
	return fmt.Sprintf("10.%d.%d.%d", 64+k>>16, (k>>8)&255, k&255)
}

// MarkerID is the inverse of MarkerAddress: ok is false for any other
// address (the scenario's own endpoints among them).
func MarkerID(addr string) (k int, ok bool) {
	rest, found := strings.CutPrefix(addr, "10.")
	if !found {
		return 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return 0, false
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 {
			return 0, false
		}
		v[i] = n
	}
	if v[0] < 64 {
		return 0, false
	}
	return (v[0]-64)<<16 | v[1]<<8 | v[2], true
}

// KubeService is Service i.
func KubeService(i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(i), Namespace: ServiceNamespace, Labels: map[string]string{"app": ServiceName(i)}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": ServiceName(i)},
			Ports: []corev1.ServicePort{{
				Name: "http", Port: ServicePort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(ServicePort),
			}},
		},
	}
}

// KubeEndpointSlice is Service i's EndpointSlice with e ready endpoints.
// With marker >= 0, endpoint 0's address is MarkerAddress(marker): change
// number marker of an endpoint-churn benchmark.
func KubeEndpointSlice(i, e, marker int) *discoveryv1.EndpointSlice {
	ready := true
	name, port, proto := "http", int32(ServicePort), corev1.ProtocolTCP
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: EndpointSliceName(i), Namespace: ServiceNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName(i), discoveryv1.LabelManagedBy: "wayfinder-bench"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	for j := range e {
		addr := KubeEndpointAddress(i, j, e)
		if j == 0 && marker >= 0 {
			addr = MarkerAddress(marker)
		}
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	return es
}

// DestinationRule is Service i's DestinationRule: least-request balancing
// and a connection pool, as a typical service has.
func DestinationRule(i int) []byte {
	return fmt.Appendf(nil, `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: %s
  namespace: %s
spec:
  host: %s
  trafficPolicy:
    loadBalancer:
      simple: LEAST_REQUEST
    connectionPool:
      tcp:
        maxConnections: 100
      http:
        http1MaxPendingRequests: 64
`, ServiceName(i), ServiceNamespace, ServiceHost(i))
}

// Istio resources the Kubernetes form creates.
var (
	gatewaysGVR         = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "gateways"}
	virtualServicesGVR  = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}
	destinationRulesGVR = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "destinationrules"}
)

// KubeOptions tune WriteKube.
type KubeOptions struct {
	Options
	// Workers is how many creates run at once; zero means 32. The caller's
	// rest.Config should not throttle (QPS -1), or the workers wait on it.
	Workers int
}

// WriteKube creates the Kubernetes form of the scenario through cfg: the
// namespaces if missing, the Gateway, and per Service its Service,
// EndpointSlice, VirtualService and DestinationRule, in parallel. The
// Istio CRDs must be installed. It stops at the first error, naming the
// object.
func WriteKube(ctx context.Context, cfg *rest.Config, o KubeOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Endpoints == 0 {
		o.Endpoints = DefaultEndpoints
	}
	if o.Services*o.Endpoints > maxKubeEndpoints {
		return fmt.Errorf("workload: %d services x %d endpoints do not fit 10.0.0.0/10", o.Services, o.Endpoints)
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	for _, ns := range []string{ServiceNamespace, GatewayNamespace} {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("workload: namespace %s: %w", ns, err)
		}
	}
	if err := createYAML(ctx, dc, gatewaysGVR, Gateway()); err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for i := range o.Services {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return createService(gctx, kc, dc, i, o) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// createService creates Service i and its EndpointSlice, VirtualService
// and DestinationRule.
func createService(ctx context.Context, kc kubernetes.Interface, dc dynamic.Interface, i int, o KubeOptions) error {
	if _, err := kc.CoreV1().Services(ServiceNamespace).Create(ctx, KubeService(i), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("workload: Service %s/%s: %w", ServiceNamespace, ServiceName(i), err)
	}
	if _, err := kc.DiscoveryV1().EndpointSlices(ServiceNamespace).Create(ctx, KubeEndpointSlice(i, o.Endpoints, -1), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("workload: EndpointSlice %s/%s: %w", ServiceNamespace, EndpointSliceName(i), err)
	}
	return errors.Join(
		createYAML(ctx, dc, virtualServicesGVR, VirtualService(i, o.Services, BasePrefix)),
		createYAML(ctx, dc, destinationRulesGVR, DestinationRule(i)))
}

// createYAML creates one object given as YAML.
func createYAML(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, doc []byte) error {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if _, err := dc.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("workload: %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
