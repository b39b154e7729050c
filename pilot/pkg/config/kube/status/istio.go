package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	listersv1 "istio.io/client-go/pkg/listers/networking/v1"
	listersv1alpha3 "istio.io/client-go/pkg/listers/networking/v1alpha3"
	securitylisters "istio.io/client-go/pkg/listers/security/v1"
	telemetrylisters "istio.io/client-go/pkg/listers/telemetry/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/leaderelection"
)

// IstioOptions configure an IstioWriter.
type IstioOptions struct {
	// Kube holds the Lease; Istio reads the objects and writes their
	// status subresource.
	Kube  kclient.Kube
	Istio kclient.Istio
	// Namespaces limits the objects watched; empty is all.
	Namespaces []string
	// Factories, when set, are the informer factories the config source
	// already runs (one per watched namespace): the writer reads the
	// objects' current status from those informers instead of watching
	// every Istio kind a second time. Namespaces is then unused.
	Factories []*kclient.IstioFactory
	// State returns what the server knows per object now
	// (xds.DiscoveryServer.ObjectStatus).
	State func() map[config.Key]*model.ObjectState
	// LeaseNamespace (the pod's namespace) and Identity (the pod's name)
	// are required; LeaseName defaults to "wayfinder-istio-status".
	LeaseNamespace, LeaseName, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default as for Options.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Interval is how often the state is compared with the written status
	// (ACKs arrive without a config change); default 1s.
	Interval time.Duration
	// QPS and Burst bound status writes (a token bucket); defaults 10 and
	// 50. Writes beyond them wait for the next pass; each object is then
	// written once with its latest status, so changes coalesce.
	QPS   float64
	Burst int
	Clock clock.WithTicker
	// Also are further status writers run on every pass under the same
	// Lease and token bucket (GatewayAPIStatus).
	Also []Syncer
	// Logger defaults to discarding.
	Logger *slog.Logger
}

func (o *IstioOptions) defaults() error {
	if o.Kube == nil || o.Istio == nil || o.State == nil {
		return errors.New("istio status: Kube, Istio and State are required")
	}
	if o.LeaseNamespace == "" || o.Identity == "" {
		return errors.New("istio status: LeaseNamespace and Identity are required (the pod's namespace and name)")
	}
	if o.LeaseName == "" {
		o.LeaseName = "wayfinder-istio-status"
	}
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = leaseTimings(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.QPS == 0 {
		o.QPS = 10
	}
	if o.Burst == 0 {
		o.Burst = 50
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// IstioWriter writes status.conditions and status.validationMessages of
// Gateways, VirtualServices, DestinationRules, ServiceEntries,
// Telemetries, RequestAuthentications, AuthorizationPolicies and
// EnvoyFilters while this
// replica holds its Lease.
type IstioWriter struct {
	opts      IstioOptions
	factories []*kclient.IstioFactory
	// synced are the networking informers writing waits for. The
	// Telemetry, security and EnvoyFilter informers are left out: their CRDs may not
	// be installed, and the other kinds' status must not wait for them.
	synced  []cache.InformerSynced
	listers []istioListers
	regs    []cache.ResourceEventHandlerRegistration
	kick    chan struct{}
	bucket  *bucket
	// written remembers per object the resourceVersion a write was based
	// on and what it wrote, so a cache that has not seen the write yet
	// causes no second write. Used by the lead loop alone.
	written map[config.Key]written2
	writes  atomic.Int64
	leader  atomic.Bool
}

type written2 struct {
	basedOn string
	status  *metav1alpha1.IstioStatus
}

type istioListers struct {
	gw listersv1.GatewayLister
	vs listersv1.VirtualServiceLister
	dr listersv1.DestinationRuleLister
	se listersv1.ServiceEntryLister
	tm telemetrylisters.TelemetryLister
	ra securitylisters.RequestAuthenticationLister
	ap securitylisters.AuthorizationPolicyLister
	ef listersv1alpha3.EnvoyFilterLister
}

// NewIstio sets up the informers; nothing is watched before Run.
func NewIstio(opts IstioOptions) (*IstioWriter, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	w := &IstioWriter{opts: opts, kick: make(chan struct{}, 1), written: map[config.Key]written2{},
		bucket: newBucket(opts.Clock, opts.QPS, opts.Burst)}
	every := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.trigger() },
		UpdateFunc: func(any, any) { w.trigger() },
		DeleteFunc: func(any) { w.trigger() },
	}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	factories := opts.Factories
	if len(factories) == 0 {
		for _, ns := range namespaces {
			factories = append(factories, kclient.NewIstioFactory(opts.Istio, 0, ns))
		}
	}
	for _, f := range factories {
		l := istioListers{gw: f.Gateways().Lister(), vs: f.VirtualServices().Lister(),
			dr: f.DestinationRules().Lister(), se: f.ServiceEntries().Lister(), tm: f.Telemetries().Lister(),
			ra: f.RequestAuthentications().Lister(), ap: f.AuthorizationPolicies().Lister(), ef: f.EnvoyFilters().Lister()}
		for _, inf := range []cache.SharedIndexInformer{f.Gateways().Informer(), f.VirtualServices().Informer(),
			f.DestinationRules().Informer(), f.ServiceEntries().Informer(), f.Telemetries().Informer(),
			f.RequestAuthentications().Informer(), f.AuthorizationPolicies().Informer(), f.EnvoyFilters().Informer()} {
			reg, err := inf.AddEventHandler(every)
			if err != nil {
				return nil, fmt.Errorf("istio status: %w", err)
			}
			w.regs = append(w.regs, reg)
		}
		w.synced = append(w.synced, f.Gateways().Informer().HasSynced, f.VirtualServices().Informer().HasSynced,
			f.DestinationRules().Informer().HasSynced, f.ServiceEntries().Informer().HasSynced)
		w.factories, w.listers = append(w.factories, f), append(w.listers, l)
	}
	return w, nil
}

func (w *IstioWriter) trigger() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Writes is the number of status updates the writer has made.
func (w *IstioWriter) Writes() int64 { return w.writes.Load() }

// Run campaigns for the Lease until ctx is cancelled, writing status
// whenever it leads.
func (w *IstioWriter) Run(ctx context.Context) error {
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range w.factories {
			f.Shutdown()
		}
	}()
	cache.WaitForCacheSync(ctx.Done(), w.synced...)
	return campaign(ctx, leaderelection.Options{
		Client: w.opts.Kube, Namespace: w.opts.LeaseNamespace, Name: w.opts.LeaseName, Identity: w.opts.Identity,
		LeaseDuration: w.opts.LeaseDuration, RenewDeadline: w.opts.RenewDeadline, RetryPeriod: w.opts.RetryPeriod,
		What: "Istio object status", Logger: w.opts.Logger,
	}, func(leadCtx context.Context) {
		w.leader.Store(true)
		defer w.leader.Store(false)
		w.lead(leadCtx) // until the Lease is lost or ctx is done
	})
}

// IsLeader reports whether this replica holds the Lease now.
func (w *IstioWriter) IsLeader() bool { return w.leader.Load() }

// lead syncs on every object change and every Interval, until the Lease
// is lost.
func (w *IstioWriter) lead(ctx context.Context) {
	tick := w.opts.Clock.NewTicker(w.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-w.kick:
		default:
		}
		if err := w.syncAll(ctx); err != nil {
			w.opts.Logger.Warn("writing Istio object status failed; will retry", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-tick.C():
		}
	}
}

// object is one Istio object as the writer sees it.
type object struct {
	key        config.Key
	generation int64
	rv         string
	status     *metav1alpha1.IstioStatus
	update     func(ctx context.Context, s *metav1alpha1.IstioStatus) error
}

// syncAll writes the status of every object whose status differs from
// the one its state computes, as far as the token bucket allows.
func (w *IstioWriter) syncAll(ctx context.Context) error {
	objs, err := w.objects()
	if err != nil {
		return err
	}
	state := w.opts.State()
	now := w.opts.Clock.Now().Truncate(time.Second) // the API server keeps seconds
	var errs []error
	seen := make(map[config.Key]bool, len(objs))
	for _, o := range objs {
		seen[o.key] = true
		want := Compute(state[o.key], o.generation, o.status, now)
		if Equal(want, o.status) {
			delete(w.written, o.key)
			continue
		}
		if prev, ok := w.written[o.key]; ok && prev.basedOn == o.rv && equalIgnoringTimes(prev.status, want) {
			continue // written; the cache has not caught up yet
		}
		if !w.bucket.take() {
			continue // rate-limited: written on a later pass with the status of then
		}
		if err := o.update(ctx, want); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %w", o.key, err))
			continue
		}
		w.writes.Add(1)
		w.written[o.key] = written2{basedOn: o.rv, status: want}
	}
	for k := range w.written {
		if !seen[k] {
			delete(w.written, k)
		}
	}
	for _, s := range w.opts.Also {
		n, err := s.Sync(ctx, w.bucket.take)
		w.writes.Add(int64(n))
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func equalIgnoringTimes(a, b *metav1alpha1.IstioStatus) bool {
	strip := func(s *metav1alpha1.IstioStatus) *metav1alpha1.IstioStatus {
		s = proto.Clone(s).(*metav1alpha1.IstioStatus)
		for _, c := range s.Conditions {
			c.LastTransitionTime, c.LastProbeTime = nil, nil
		}
		return s
	}
	return proto.Equal(strip(a), strip(b))
}

// objects lists the seven kinds from the caches, each with its update.
func (w *IstioWriter) objects() ([]object, error) {
	var out []object
	nw := w.opts.Istio.NetworkingV1()
	tw := w.opts.Istio.TelemetryV1()
	sw := w.opts.Istio.SecurityV1()
	aw := w.opts.Istio.NetworkingV1alpha3()
	for _, l := range w.listers {
		gws, err := l.gw.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.Gateway, gws, nw.Gateways, func(c *networkingv1.Gateway) *metav1alpha1.IstioStatus { return &c.Status })
		vss, err := l.vs.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.VirtualService, vss, nw.VirtualServices, func(c *networkingv1.VirtualService) *metav1alpha1.IstioStatus { return &c.Status })
		drs, err := l.dr.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.DestinationRule, drs, nw.DestinationRules, func(c *networkingv1.DestinationRule) *metav1alpha1.IstioStatus { return &c.Status })
		ses, err := l.se.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, c := range ses {
			// A ServiceEntry's status is Istio's with addresses; only the
			// common part is compared and written, addresses are kept.
			cur := &metav1alpha1.IstioStatus{Conditions: c.Status.Conditions,
				ValidationMessages: c.Status.ValidationMessages, ObservedGeneration: c.Status.ObservedGeneration}
			out = append(out, object{key: config.Key{Kind: schema.ServiceEntry, Namespace: c.Namespace, Name: c.Name},
				generation: c.Generation, rv: c.ResourceVersion, status: cur,
				update: func(ctx context.Context, s *metav1alpha1.IstioStatus) error {
					cp := c.DeepCopy()
					s = proto.Clone(s).(*metav1alpha1.IstioStatus)
					cp.Status.Conditions, cp.Status.ValidationMessages, cp.Status.ObservedGeneration =
						s.Conditions, s.ValidationMessages, s.ObservedGeneration
					_, err := nw.ServiceEntries(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
					return err
				}})
		}
		// Until the Telemetry informer has synced (or when its CRD is
		// not installed) this lists what it has, possibly nothing.
		tms, err := l.tm.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.Telemetry, tms, tw.Telemetries, func(c *telemetryv1.Telemetry) *metav1alpha1.IstioStatus { return &c.Status })
		// The security kinds, like Telemetry, list what their informers
		// have: nothing where their CRDs are not installed.
		ras, err := l.ra.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.RequestAuthentication, ras, sw.RequestAuthentications, func(c *securityv1.RequestAuthentication) *metav1alpha1.IstioStatus { return &c.Status })
		aps, err := l.ap.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.AuthorizationPolicy, aps, sw.AuthorizationPolicies, func(c *securityv1.AuthorizationPolicy) *metav1alpha1.IstioStatus { return &c.Status })
		efs, err := l.ef.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = appendObjects(out, schema.EnvoyFilter, efs, aw.EnvoyFilters, func(c *networkingv1alpha3.EnvoyFilter) *metav1alpha1.IstioStatus { return &c.Status })
	}
	return out, nil
}

// setStatus sets dst's fields to a copy of s's (a proto message must not
// be copied by value).
func setStatus(dst, s *metav1alpha1.IstioStatus) {
	s = proto.Clone(s).(*metav1alpha1.IstioStatus)
	dst.Conditions, dst.ValidationMessages, dst.ObservedGeneration = s.Conditions, s.ValidationMessages, s.ObservedGeneration
}

// statusObject is a generated Istio client type: metadata and DeepCopy
// (its IstioStatus is a field, read through a function).
type statusObject[T any] interface {
	*T
	metav1.Object
	DeepCopy() *T
}

// statusUpdater is the part of a generated typed client that writes one
// kind's status.
type statusUpdater[T any] interface {
	UpdateStatus(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error)
}

// appendObjects adds items of kind, each written through client(ns).
func appendObjects[T any, P statusObject[T], C statusUpdater[T]](out []object, kind schema.Kind, items []P, client func(string) C,
	status func(P) *metav1alpha1.IstioStatus,
) []object {
	for _, c := range items {
		out = append(out, object{key: config.Key{Kind: kind, Namespace: c.GetNamespace(), Name: c.GetName()},
			generation: c.GetGeneration(), rv: c.GetResourceVersion(), status: status(c),
			update: func(ctx context.Context, s *metav1alpha1.IstioStatus) error {
				cp := P(c.DeepCopy())
				setStatus(status(cp), s)
				_, err := client(cp.GetNamespace()).UpdateStatus(ctx, (*T)(cp), metav1.UpdateOptions{})
				return err
			}})
	}
	return out
}
