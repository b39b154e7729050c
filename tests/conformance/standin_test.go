package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// standIn does, for the conformance suite, the little a cluster's
// controllers and kubelets would: a "default" ServiceAccount in every
// namespace; for every Deployment its replicas as Pods marked Running and
// Ready; for every Service with a selector an EndpointSlice of its Ready
// Pods; for every LoadBalancer Service a loopback ingress address
// (127.20.0.0/16), so that the Gateways' addresses, and any request the
// suite would send them, stay on loopback. Pod addresses come from
// 198.18.0.0/15 (RFC 2544's benchmarking range, never routed): the API
// server refuses loopback addresses in EndpointSlices. Nothing is ever
// sent to either (see trafficGate).
//
// Work is keyed by namespace: any change in a namespace reconciles the
// whole namespace, which is small in the suite.
type standIn struct {
	kube kubernetes.Interface
	log  *slog.Logger

	mu      sync.Mutex
	podIPs  netip.Addr // last pod IP handed out
	lbIPs   netip.Addr // last load-balancer IP handed out
	factory informers.SharedInformerFactory
	queue   workqueue.TypedRateLimitingInterface[string]
}

// standInLabel marks the Pods and EndpointSlices the stand-in owns, with
// the name of the Deployment or Service they stand for.
const (
	standInPodLabel   = "conformance.wayfinder.io/deployment"
	standInSliceLabel = "conformance.wayfinder.io/service"
	standInManager    = "wayfinder-conformance-standin"
	standInNode       = "conformance-node"
)

func newStandIn(kube kubernetes.Interface, log *slog.Logger) *standIn {
	return &standIn{
		kube:    kube,
		log:     log,
		podIPs:  netip.MustParseAddr("198.18.0.0"),
		lbIPs:   netip.MustParseAddr("127.20.0.0"),
		factory: informers.NewSharedInformerFactory(kube, 0),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			10*time.Millisecond, time.Second)),
	}
}

// run starts the informers and reconciles until ctx ends.
func (s *standIn) run(ctx context.Context) error {
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.enqueue(o) },
		UpdateFunc: func(_, o any) { s.enqueue(o) },
		DeleteFunc: func(o any) { s.enqueue(o) },
	}
	for _, inf := range []cache.SharedIndexInformer{
		s.factory.Core().V1().Namespaces().Informer(),
		s.factory.Apps().V1().Deployments().Informer(),
		s.factory.Core().V1().Pods().Informer(),
		s.factory.Core().V1().Services().Informer(),
	} {
		if _, err := inf.AddEventHandler(enqueue); err != nil {
			return err
		}
	}
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("stand-in: %v informer did not sync", typ)
		}
	}
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		ns, quit := s.queue.Get()
		if quit {
			return nil
		}
		if err := s.reconcile(ctx, ns); err != nil && ctx.Err() == nil {
			s.log.Warn("stand-in: retrying namespace", "namespace", ns, "error", err)
			s.queue.AddRateLimited(ns)
		} else {
			s.queue.Forget(ns)
		}
		s.queue.Done(ns)
	}
}

func (s *standIn) enqueue(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, err := metav1ObjectOf(o)
	if err != nil {
		return
	}
	if _, isNS := o.(*corev1.Namespace); isNS {
		s.queue.Add(m.GetName())
		return
	}
	s.queue.Add(m.GetNamespace())
}

func metav1ObjectOf(o any) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", o)
	}
	return m, nil
}

// reconcile brings one namespace to what its controllers would make of it.
func (s *standIn) reconcile(ctx context.Context, ns string) error {
	nsObj, err := s.factory.Core().V1().Namespaces().Lister().Get(ns)
	if apierrors.IsNotFound(err) || (err == nil && nsObj.DeletionTimestamp != nil) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.serviceAccount(ctx, ns); err != nil {
		return err
	}
	deps, err := s.factory.Apps().V1().Deployments().Lister().Deployments(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, d := range deps {
		if err := s.pods(ctx, d); err != nil {
			return err
		}
	}
	if err := s.orphanPods(ctx, ns, deps); err != nil {
		return err
	}
	svcs, err := s.factory.Core().V1().Services().Lister().Services(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, svc := range svcs {
		if err := s.endpoints(ctx, svc); err != nil {
			return err
		}
		if err := s.loadBalancer(ctx, svc); err != nil {
			return err
		}
	}
	return nil
}

func (s *standIn) serviceAccount(ctx context.Context, ns string) error {
	_, err := s.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
	}, metav1.CreateOptions{FieldManager: standInManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// pods makes a Deployment's replicas exist as Running, Ready Pods.
func (s *standIn) pods(ctx context.Context, d *appsv1.Deployment) error {
	if d.DeletionTimestamp != nil {
		return nil
	}
	replicas := int(ptr.Deref(d.Spec.Replicas, 1))
	for i := range replicas {
		name := d.Name + "-standin-" + strconv.Itoa(i)
		pod, err := s.factory.Core().V1().Pods().Lister().Pods(d.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			lbls := map[string]string{standInPodLabel: d.Name}
			for k, v := range d.Spec.Template.Labels {
				lbls[k] = v
			}
			pod = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: d.Namespace, Name: name, Labels: lbls, Annotations: d.Spec.Template.Annotations,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID}},
				},
				Spec: *d.Spec.Template.Spec.DeepCopy(),
			}
			// Bound to a node, as the scheduler would: the suite copies
			// a Pod's node name into EndpointSlices it writes itself.
			pod.Spec.NodeName = standInNode
			if pod, err = s.kube.CoreV1().Pods(d.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: standInManager}); err != nil {
				return fmt.Errorf("pod %s/%s: %w", d.Namespace, name, err)
			}
		} else if err != nil {
			return err
		}
		if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" {
			continue
		}
		pod = pod.DeepCopy()
		ip := s.next(&s.podIPs).String()
		now := metav1.NewTime(time.Now())
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "127.0.0.1",
			HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, StartTime: &now,
		}
		for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		for _, c := range pod.Spec.Containers {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
		if _, err := s.kube.CoreV1().Pods(d.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: standInManager}); err != nil {
			return fmt.Errorf("pod %s/%s status: %w", d.Namespace, name, err)
		}
	}
	return nil
}

// orphanPods deletes the stand-in's Pods whose Deployment is gone or has
// fewer replicas (there is no garbage collector).
func (s *standIn) orphanPods(ctx context.Context, ns string, deps []*appsv1.Deployment) error {
	want := map[string]bool{}
	for _, d := range deps {
		if d.DeletionTimestamp != nil {
			continue
		}
		for i := range int(ptr.Deref(d.Spec.Replicas, 1)) {
			want[d.Name+"-standin-"+strconv.Itoa(i)] = true
		}
	}
	sel := labels.SelectorFromSet(nil)
	pods, err := s.factory.Core().V1().Pods().Lister().Pods(ns).List(sel)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if _, ours := p.Labels[standInPodLabel]; !ours || want[p.Name] || p.DeletionTimestamp != nil {
			continue
		}
		err := s.kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// endpoints writes one EndpointSlice per Service with a selector: its
// Ready Pods, ports resolved as the EndpointSlice controller does (a
// named target port through the Pod's container ports).
func (s *standIn) endpoints(ctx context.Context, svc *corev1.Service) error {
	if len(svc.Spec.Selector) == 0 || svc.DeletionTimestamp != nil {
		return nil
	}
	pods, err := s.factory.Core().V1().Pods().Lister().Pods(svc.Namespace).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, Name: svc.Name + "-standin",
			Labels:          map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: standInManager, standInSliceLabel: svc.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	var first *corev1.Pod
	for _, p := range pods {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		if first == nil {
			first = p
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	for _, sp := range svc.Spec.Ports {
		port := targetPort(sp, first)
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Protocol: ptr.To(sp.Protocol), Port: ptr.To(port), AppProtocol: sp.AppProtocol,
		})
	}
	cur, err := s.kube.DiscoveryV1().EndpointSlices(svc.Namespace).Get(ctx, slice.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = s.kube.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{FieldManager: standInManager})
	case err == nil:
		if sameSlice(cur, slice) {
			return nil
		}
		slice.ResourceVersion = cur.ResourceVersion
		_, err = s.kube.DiscoveryV1().EndpointSlices(svc.Namespace).Update(ctx, slice, metav1.UpdateOptions{FieldManager: standInManager})
	}
	return err
}

func sameSlice(a, b *discoveryv1.EndpointSlice) bool {
	if len(a.Endpoints) != len(b.Endpoints) || len(a.Ports) != len(b.Ports) {
		return false
	}
	for i := range a.Endpoints {
		if a.Endpoints[i].Addresses[0] != b.Endpoints[i].Addresses[0] {
			return false
		}
	}
	for i := range a.Ports {
		if ptr.Deref(a.Ports[i].Port, 0) != ptr.Deref(b.Ports[i].Port, 0) || ptr.Deref(a.Ports[i].Name, "") != ptr.Deref(b.Ports[i].Name, "") {
			return false
		}
	}
	return true
}

// targetPort is the port a Service port reaches on pod p.
func targetPort(sp corev1.ServicePort, p *corev1.Pod) int32 {
	switch {
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "" && p != nil:
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return cp.ContainerPort
				}
			}
		}
	}
	return sp.Port
}

// loadBalancer gives a LoadBalancer Service a loopback ingress address, as
// a cloud's load-balancer controller would give it a public one.
func (s *standIn) loadBalancer(ctx context.Context, svc *corev1.Service) error {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) > 0 || svc.DeletionTimestamp != nil {
		return nil
	}
	svc = svc.DeepCopy()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: s.next(&s.lbIPs).String(), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
	_, err := s.kube.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{FieldManager: standInManager})
	return err
}

// next hands out the address after *last, skipping .0 and .255.
func (s *standIn) next(last *netip.Addr) netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		*last = last.Next()
		if b := last.As4(); b[3] != 0 && b[3] != 255 {
			return *last
		}
	}
}
