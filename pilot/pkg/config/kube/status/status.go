// Package status writes the status.loadBalancer of the Ingresses Wayfinder
// handles: the addresses of the gateway Service (its load balancer
// ingress, then its external IPs; its cluster IP when it has neither), so
// that kubectl and tools like external-dns see where the Ingress is served.
//
// Every replica serves xDS, but only one should write status, or replicas
// would race each other with conflicting updates: the writer campaigns for
// a coordination.k8s.io Lease and writes only while it holds it. Only the
// status subresource is written (UpdateStatus), never the spec.
//
// IstioWriter (istio.go) does the same for Gateways, VirtualServices,
// DestinationRules and ServiceEntries under a Lease of its own: Istio's
// Reconciled condition and coded validationMessages, computed from the
// discovery server's per-object state (Compute), rate-limited. Under the
// same Lease and bucket it runs further Syncers: GatewayAPIStatus
// (gatewayapi.go) writes the Gateway API status package gatewayapi computes.
package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersnetworkingv1 "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/leaderelection"
)

// Options configure a Writer.
type Options struct {
	// Client writes Ingress status and the Lease.
	Client kclient.Kube
	// Namespaces limits the Ingresses watched (--watch-namespaces); empty
	// is all. IngressClasses are cluster-scoped; only the gateway Service
	// is watched in its namespace.
	Namespaces []string
	// Ingress picks the Ingresses handled (IngressClass, ControllerName).
	Ingress ingress.Options
	// ServiceNamespace and ServiceName name the gateway Service whose
	// addresses are written; default istio-system/istio-ingressgateway.
	ServiceNamespace string
	ServiceName      string
	// LeaseNamespace is where the Lease lives: the pod's namespace. Required.
	LeaseNamespace string
	// LeaseName defaults to "wayfinder-ingress-status".
	LeaseName string
	// Identity is this replica in the Lease (the pod name). Required.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election;
	// defaults 15s, 10s and 2s (client-go's recommended values).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// RetryDelay is how long after a failed write all status is synced
	// again; default 5s.
	RetryDelay time.Duration
	// Clock times retries and the wait for the first sync; default the
	// real clock. (Leader election runs on the real clock.)
	Clock  clock.WithTicker
	Logger *slog.Logger
}

func (o *Options) defaults() error {
	if o.Client == nil {
		return errors.New("status: Client is required")
	}
	if o.LeaseNamespace == "" || o.Identity == "" {
		return errors.New("status: LeaseNamespace and Identity are required (the pod's namespace and name)")
	}
	if o.ServiceNamespace == "" {
		o.ServiceNamespace = "istio-system"
	}
	if o.ServiceName == "" {
		o.ServiceName = "istio-ingressgateway"
	}
	if o.LeaseName == "" {
		o.LeaseName = "wayfinder-ingress-status"
	}
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = leaseTimings(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	if o.RetryDelay == 0 {
		o.RetryDelay = 5 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Writer keeps the status of handled Ingresses up to date while it leads.
type Writer struct {
	opts      Options
	factories []*kclient.KubeFactory
	ingresses []listersnetworkingv1.IngressLister
	classes   listersnetworkingv1.IngressClassLister
	services  listerscorev1.ServiceLister
	watches   []watch
	// kick is signalled (never blocking) by every relevant change.
	kick chan struct{}
	// writes counts the status updates made.
	writes atomic.Int64

	mu     sync.Mutex
	leader bool

	// written remembers, per Ingress, the version a write was based on and
	// what it wrote: until the cache sees the write, the stale cached
	// status must not cause the same write again.
	written map[string]written
}

type written struct {
	basedOn string // resourceVersion
	addrs   []networkingv1.IngressLoadBalancerIngress
}

// watch is one informer registration, and whether the API server refused
// it (RBAC): a refused watch is reported and treated as empty.
type watch struct {
	reg    cache.ResourceEventHandlerRegistration
	denied *atomic.Bool
}

// New sets up the Writer's informers; nothing is watched before Run.
func New(opts Options) (*Writer, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	w := &Writer{opts: opts, kick: make(chan struct{}, 1), written: map[string]written{}}
	every := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.trigger() },
		UpdateFunc: func(any, any) { w.trigger() },
		DeleteFunc: func(any) { w.trigger() },
	}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		f := kclient.NewKubeFactory(opts.Client, 0, ns, nil)
		inf := f.Ingresses()
		w.factories, w.ingresses = append(w.factories, f), append(w.ingresses, inf.Lister())
		if err := w.watch("Ingresses in namespace "+cmp.Or(ns, "(all)"), inf.Informer(), every); err != nil {
			return nil, err
		}
	}
	cf := kclient.NewKubeFactory(opts.Client, 0, "", nil)
	classes := cf.IngressClasses()
	w.factories, w.classes = append(w.factories, cf), classes.Lister()
	if err := w.watch("IngressClasses", classes.Informer(), every); err != nil {
		return nil, err
	}
	sf := kclient.NewKubeFactory(opts.Client, 0, opts.ServiceNamespace, nil)
	svcs := sf.Services()
	w.factories, w.services = append(w.factories, sf), svcs.Lister()
	gateway := cache.FilteringResourceEventHandler{FilterFunc: w.isGatewayService, Handler: every}
	if err := w.watch("Services in namespace "+opts.ServiceNamespace, svcs.Informer(), gateway); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) watch(what string, inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	denied := &atomic.Bool{}
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !denied.Swap(true) {
				w.opts.Logger.Error("Ingress status: watch forbidden by RBAC; treated as empty", "watch", what, "error", err)
			}
			return
		}
		w.opts.Logger.Warn("Ingress status: watch failed; retrying", "watch", what, "error", err)
	}); err != nil {
		return fmt.Errorf("status: %s: %w", what, err)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("status: %s: %w", what, err)
	}
	w.watches = append(w.watches, watch{reg: reg, denied: denied})
	return nil
}

// synced reports whether every watch has listed (or been refused).
func (w *Writer) synced() bool {
	for _, wt := range w.watches {
		if !wt.reg.HasSynced() && !wt.denied.Load() {
			return false
		}
	}
	return true
}

func (w *Writer) isGatewayService(obj any) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*corev1.Service)
	return ok && s.Namespace == w.opts.ServiceNamespace && s.Name == w.opts.ServiceName
}

func (w *Writer) trigger() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Writes is the number of Ingress status updates the writer has made.
func (w *Writer) Writes() int64 { return w.writes.Load() }

// IsLeader reports whether this replica holds the Lease now.
func (w *Writer) IsLeader() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leader
}

func (w *Writer) setLeader(v bool) {
	w.mu.Lock()
	w.leader = v
	w.mu.Unlock()
}

// Run campaigns for the Lease until ctx is cancelled, writing status
// whenever it leads. A lost Lease is campaigned for again. On return the
// Lease is released, so another replica takes over at once.
func (w *Writer) Run(ctx context.Context) error {
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range w.factories {
			f.Shutdown()
		}
	}()
	tick := w.opts.Clock.NewTicker(20 * time.Millisecond)
	for !w.synced() {
		select {
		case <-ctx.Done():
			tick.Stop()
			return nil
		case <-tick.C():
		}
	}
	tick.Stop()
	return campaign(ctx, leaderelection.Options{
		Client: w.opts.Client, Namespace: w.opts.LeaseNamespace, Name: w.opts.LeaseName, Identity: w.opts.Identity,
		LeaseDuration: w.opts.LeaseDuration, RenewDeadline: w.opts.RenewDeadline, RetryPeriod: w.opts.RetryPeriod,
		What: "Ingress status", Logger: w.opts.Logger,
	}, func(leadCtx context.Context) {
		w.setLeader(true)
		w.lead(leadCtx) // until the Lease is lost or ctx is done
		w.setLeader(false)
	})
}

// lead syncs all status at once, then again on every change, until the
// Lease is lost. A failed write is retried after RetryDelay.
func (w *Writer) lead(ctx context.Context) {
	var retry <-chan time.Time
	for {
		// This pass covers every change signalled so far.
		select {
		case <-w.kick:
		default:
		}
		if err := w.syncAll(ctx); err != nil {
			w.opts.Logger.Warn("writing Ingress status failed; will retry", "error", err, "after", w.opts.RetryDelay)
			retry = w.opts.Clock.After(w.opts.RetryDelay)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-retry:
			retry = nil
		}
	}
}

// syncAll writes the status of every handled Ingress whose addresses
// differ from the gateway Service's. It reads only the informer caches, so
// an Ingress already right costs nothing.
func (w *Writer) syncAll(ctx context.Context) error {
	var ings []*networkingv1.Ingress
	for _, l := range w.ingresses {
		list, err := l.List(labels.Everything())
		if err != nil {
			return err
		}
		ings = append(ings, list...)
	}
	classes, err := w.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	want := w.addresses()
	var errs []error
	seen := make(map[string]bool, len(ings))
	for _, ing := range ings {
		key := ing.Namespace + "/" + ing.Name
		seen[key] = true
		if !ingress.Handled(ing, classes, w.opts.Ingress) || sameAddresses(ing.Status.LoadBalancer.Ingress, want) {
			delete(w.written, key)
			continue
		}
		if prev, ok := w.written[key]; ok && prev.basedOn == ing.ResourceVersion && sameAddresses(prev.addrs, want) {
			continue // written; the cache has not caught up yet
		}
		// Objects from the cache are shared: write a copy.
		cp := ing.DeepCopy()
		cp.Status.LoadBalancer.Ingress = slices.Clone(want)
		if _, err := w.opts.Client.NetworkingV1().Ingresses(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted meanwhile
			}
			errs = append(errs, fmt.Errorf("Ingress %s/%s: %w", ing.Namespace, ing.Name, err))
			continue
		}
		w.written[key] = written{basedOn: ing.ResourceVersion, addrs: want}
		w.writes.Add(1)
		w.opts.Logger.Debug("wrote Ingress status", "ingress", ing.Namespace+"/"+ing.Name, "addresses", want)
	}
	for key := range w.written {
		if !seen[key] {
			delete(w.written, key) // the Ingress is gone
		}
	}
	return errors.Join(errs...)
}

// sameAddresses compares addresses; ports are never written, so an entry
// with ports differs from ours.
func sameAddresses(a, b []networkingv1.IngressLoadBalancerIngress) bool {
	return slices.EqualFunc(a, b, func(x, y networkingv1.IngressLoadBalancerIngress) bool {
		return x.IP == y.IP && x.Hostname == y.Hostname && len(x.Ports) == 0 && len(y.Ports) == 0
	})
}

// addresses are the gateway Service's (see Addresses); none when the
// Service does not exist.
func (w *Writer) addresses() []networkingv1.IngressLoadBalancerIngress {
	svc, err := w.services.Services(w.opts.ServiceNamespace).Get(w.opts.ServiceName)
	if err != nil {
		return nil
	}
	return Addresses(svc)
}

// Addresses are the Ingress load balancer entries for a gateway Service:
// an ExternalName's name; else its load balancer ingress and external IPs;
// else its cluster IP. IPs come first, then hostnames, each sorted,
// without duplicates; nil when there are none.
func Addresses(svc *corev1.Service) []networkingv1.IngressLoadBalancerIngress {
	var raw []string
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		raw = []string{svc.Spec.ExternalName}
	default:
		for _, lb := range svc.Status.LoadBalancer.Ingress {
			if lb.IP != "" {
				raw = append(raw, lb.IP)
			} else if lb.Hostname != "" {
				raw = append(raw, lb.Hostname)
			}
		}
		raw = append(raw, svc.Spec.ExternalIPs...)
		if len(raw) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			raw = []string{svc.Spec.ClusterIP}
		}
	}
	out := make([]networkingv1.IngressLoadBalancerIngress, 0, len(raw))
	for _, a := range raw {
		if a == "" {
			continue
		}
		if _, err := netip.ParseAddr(a); err == nil {
			out = append(out, networkingv1.IngressLoadBalancerIngress{IP: a})
		} else {
			out = append(out, networkingv1.IngressLoadBalancerIngress{Hostname: a})
		}
	}
	slices.SortFunc(out, func(a, b networkingv1.IngressLoadBalancerIngress) int {
		if c := strings.Compare(a.Hostname, b.Hostname); c != 0 {
			return c // "" (an IP entry) first
		}
		return strings.Compare(a.IP, b.IP)
	})
	out = slices.CompactFunc(out, func(a, b networkingv1.IngressLoadBalancerIngress) bool {
		return a.IP == b.IP && a.Hostname == b.Hostname
	})
	if len(out) == 0 {
		return nil
	}
	return out
}
