package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// The Gateway API workload of the route-propagation cases: one
// GatewayClass of Wayfinder's controller, one Gateway "bench" with an HTTP
// listener on port 80, backends (a Service with an EndpointSlice of 3
// endpoints per 50 routes, at most 100), and the routes. Everything is in
// namespace routeNamespace, the proxies' too: a Gateway API Gateway is
// served to the proxies of its own namespace labelled
// gateway.networking.k8s.io/gateway-name: bench.
//
// HTTPRoute i ("route-i") has its own hostname and one PathPrefix rule,
// as in gateway-api-bench; on the HTTPRoute case it attaches to the
// Gateway, on the ListenerSet case to ListenerSet j = i / perSet
// ("ls-j"), whose one listener (port 80, hostname "*.ls-j.bench.example")
// the Gateway admits through allowedListeners.
const (
	routeNamespace = workload.ServiceNamespace
	routeGateway   = "bench"
	routeClass     = "wayfinder-bench"
	// routeController is pilot/pkg/config/gatewayapi.ControllerName; not
	// imported, so that the bench does not build against a conversion
	// package being edited.
	routeController = "wayfinder.io/gateway-controller"
	// routeProxyLabel is the label by which a Gateway selects its proxies
	// (pilot/pkg/model.GatewayAPIProxyLabel).
	routeProxyLabel = "gateway.networking.k8s.io/gateway-name"
	// routesPerBackend routes share one backend Service.
	routesPerBackend = 50
	maxBackends      = 100
	// markerPrefix starts every path a change writes: "/wfmark-K" for
	// change K.
	markerPrefix = "/wfmark-"
)

// routeBackends is how many Services the routes of c spread over.
func routeBackends(c routeCase) int {
	return min(maxBackends, max(1, (c.totalRoutes()+routesPerBackend-1)/routesPerBackend))
}

// routeHostname is the hostname of route i; on the ListenerSet case it is
// under its ListenerSet's listener hostname.
func routeHostname(c routeCase, i int) string {
	if c.ListenerSets > 0 {
		return fmt.Sprintf("r-%d.ls-%d.bench.example", i, i/c.Routes)
	}
	return fmt.Sprintf("route-%d.bench.example", i)
}

// markerPath is the path change k writes.
func markerPath(k int) string { return markerPrefix + strconv.Itoa(k) }

// markerID is the inverse of markerPath, for the load tool's
// RouteMarker: a Gateway API PathPrefix "/wfmark-K" reaches Envoy as the
// path "/wfmark-K" and the prefix "/wfmark-K/", both K.
func markerID(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, markerPrefix)
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(strings.TrimSuffix(rest, "/"))
	if err != nil || k < 0 || strings.HasPrefix(rest, "+") {
		return 0, false
	}
	return k, true
}

// httpRoute is route i of c with the path prefix path (its own,
// "/route-i", or a change's marker) under the given name and hostname.
func httpRoute(c routeCase, name, hostname, path string, backend int) *gw.HTTPRoute {
	port := gw.PortNumber(workload.ServicePort)
	prefix := gw.PathMatchPathPrefix
	parent := gw.ParentReference{Name: routeGateway}
	if c.ListenerSets > 0 {
		kind := gw.Kind("ListenerSet")
		parent = gw.ParentReference{Kind: &kind, Name: gw.ObjectName(listenerSetName(hostname))}
	}
	return &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: routeNamespace, Name: name},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{parent}},
			Hostnames:       []gw.Hostname{gw.Hostname(hostname)},
			Rules: []gw.HTTPRouteRule{{
				Matches: []gw.HTTPRouteMatch{{Path: &gw.HTTPPathMatch{Type: &prefix, Value: new(path)}}},
				BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{BackendObjectReference: gw.BackendObjectReference{
					Name: gw.ObjectName(workload.ServiceName(backend)), Port: &port}}}},
			}},
		},
	}
}

// listenerSetName is the ListenerSet a ListenerSet-case hostname
// ("r-I.ls-J.bench.example") is under.
func listenerSetName(hostname string) string {
	_, rest, _ := strings.Cut(hostname, ".")
	ls, _, _ := strings.Cut(rest, ".")
	return ls
}

// listenerSet is ListenerSet j: one HTTP listener on port 80 for
// "*.ls-j.bench.example", attached to the Gateway.
func listenerSet(j int) *gw.ListenerSet {
	host := gw.Hostname(fmt.Sprintf("*.ls-%d.bench.example", j))
	return &gw.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: routeNamespace, Name: fmt.Sprintf("ls-%d", j)},
		Spec: gw.ListenerSetSpec{
			ParentRef: gw.ParentGatewayReference{Name: routeGateway},
			Listeners: []gw.ListenerEntry{{Name: "http", Hostname: &host, Port: 80, Protocol: gw.HTTPProtocolType}},
		},
	}
}

// writeRouteWorkload creates c's objects through the two clients: the
// namespace, backends, GatewayClass, Gateway, ListenerSets and routes, in
// parallel (workers at once). It returns how many objects it created and
// stops at the first error, naming the object.
func writeRouteWorkload(ctx context.Context, kc kubernetes.Interface, gc gwclient.Interface, c routeCase, workers int) (int, error) {
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: routeNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("namespace %s: %w", routeNamespace, err)
	}
	if _, err := gc.GatewayV1().GatewayClasses().Create(ctx, &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: routeClass},
		Spec:       gw.GatewayClassSpec{ControllerName: routeController},
	}, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("GatewayClass %s: %w", routeClass, err)
	}
	g := &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: routeNamespace, Name: routeGateway},
		Spec: gw.GatewaySpec{GatewayClassName: routeClass, Listeners: []gw.Listener{{
			Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
		}}},
	}
	if c.ListenerSets > 0 {
		same := gw.NamespacesFromSame
		g.Spec.AllowedListeners = &gw.AllowedListeners{Namespaces: &gw.ListenerNamespaces{From: &same}}
	}
	if _, err := gc.GatewayV1().Gateways(routeNamespace).Create(ctx, g, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("Gateway %s/%s: %w", routeNamespace, routeGateway, err)
	}
	backends := routeBackends(c)
	objects := 3 + 2*backends + c.ListenerSets + c.totalRoutes()
	err := parallel(ctx, workers, backends, func(ctx context.Context, j int) error {
		if _, err := kc.CoreV1().Services(routeNamespace).Create(ctx, workload.KubeService(j), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("Service %s/%s: %w", routeNamespace, workload.ServiceName(j), err)
		}
		if _, err := kc.DiscoveryV1().EndpointSlices(routeNamespace).Create(ctx, workload.KubeEndpointSlice(j, workload.DefaultEndpoints, -1),
			metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("EndpointSlice %s/%s: %w", routeNamespace, workload.EndpointSliceName(j), err)
		}
		return nil
	})
	if err == nil {
		err = parallel(ctx, workers, c.ListenerSets, func(ctx context.Context, j int) error {
			ls := listenerSet(j)
			if _, err := gc.GatewayV1().ListenerSets(routeNamespace).Create(ctx, ls, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("ListenerSet %s/%s: %w", routeNamespace, ls.Name, err)
			}
			return nil
		})
	}
	if err == nil {
		err = parallel(ctx, workers, c.totalRoutes(), func(ctx context.Context, i int) error {
			r := httpRoute(c, fmt.Sprintf("route-%d", i), routeHostname(c, i), fmt.Sprintf("/route-%d", i), i%backends)
			if _, err := gc.GatewayV1().HTTPRoutes(routeNamespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("HTTPRoute %s/%s: %w", routeNamespace, r.Name, err)
			}
			return nil
		})
	}
	return objects, err
}

// parallel runs do(0..n-1) on workers goroutines and returns the first
// error, cancelling the rest.
func parallel(parent context.Context, workers, n int, do func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(parent)
	g.SetLimit(max(workers, 1))
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return do(ctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return parent.Err()
}
