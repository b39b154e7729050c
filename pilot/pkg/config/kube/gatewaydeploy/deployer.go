package gatewaydeploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// DeployerOptions configure a Deployer.
type DeployerOptions struct {
	// Kube applies and watches the deployed objects. Required.
	Kube kclient.Kube
	// Namespaces limits the watch of deployed objects (--watch-namespaces);
	// empty is all.
	Namespaces []string
	// Input reads the Gateway API objects now (kube/gatewayapi.Controller's
	// StatusInput). Required.
	Input func() (gatewayapi.Input, error)
	// ControllerName of the GatewayClasses handled; default
	// gatewayapi.ControllerName.
	ControllerName string
	// Render tunes what is deployed.
	Render Options
	Logger *slog.Logger
	// Clock times the rechecks of objects in the way; default the real
	// clock.
	Clock clock.PassiveClock
	// Recheck is how long an object found in the way (not the deployer's)
	// is taken as still there before it is read again; default
	// DefaultRecheck. It carries no label, so no informer tells when it
	// goes.
	Recheck time.Duration
}

// DefaultRecheck is the default of DeployerOptions.Recheck.
const DefaultRecheck = 10 * time.Second

// Deployer deploys the proxies of each handled Gateway (see doc.go). It
// is a status.Syncer: the Istio status writer runs Sync on each of its
// passes while it holds its Lease, so only the leader applies, within the
// writer's token bucket. Its informers (Run) watch only the objects it
// labelled, on every replica, so a new leader starts from warm caches.
type Deployer struct {
	opts      DeployerOptions
	log       *slog.Logger
	factories []*kclient.KubeFactory
	synced    []cache.InformerSynced
	listers   []kindLister
	applies   atomic.Int64
	deletes   atomic.Int64
	// reported is the last failure logged per object or Gateway, so a
	// lasting failure is logged once, not on every pass. Used by Sync
	// alone.
	reported map[string]string
	// kinds are the API calls of each kind deployed.
	kinds map[string]kindClient
	// inWay are the objects found in the way by live reads, by
	// "Kind/namespace/name". Used by Sync alone.
	inWay map[string]inWay
	// holds are the Gateways held back by objects in the way, for Held.
	holds holds
}

// kindLister lists one kind of deployed object in one watched namespace.
type kindLister struct {
	kind string
	list func() ([]metav1.Object, error)
	get  func(namespace, name string) (runtime.Object, error)
}

// New checks its options; nothing is watched before Run.
func New(opts DeployerOptions) (*Deployer, error) {
	if opts.Kube == nil || opts.Input == nil {
		return nil, errors.New("gateway deployer: Kube and Input are required")
	}
	opts.Render = opts.Render.WithDefaults()
	if err := opts.Render.Validate(); err != nil {
		return nil, err
	}
	if opts.ControllerName == "" {
		opts.ControllerName = gatewayapi.ControllerName
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	d := &Deployer{opts: opts, log: opts.Logger.With("component", "gateway-deployer"), reported: map[string]string{},
		kinds: kindClients(opts.Kube), inWay: map[string]inWay{}}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	selector := labels.SelectorFromSet(labels.Set{ManagedLabel: ManagedLabelValue}).String()
	for _, ns := range namespaces {
		f := kclient.NewKubeFactory(opts.Kube, 0, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
		sa, cm, dep, svc, role, rb := f.ServiceAccounts(), f.ConfigMaps(), f.Deployments(), f.Services(), f.Roles(), f.RoleBindings()
		d.synced = append(d.synced, sa.Informer().HasSynced, cm.Informer().HasSynced, dep.Informer().HasSynced, svc.Informer().HasSynced,
			role.Informer().HasSynced, rb.Informer().HasSynced)
		d.listers = append(d.listers,
			kindLister{kind: "ServiceAccount",
				list: func() ([]metav1.Object, error) { return objs(sa.Lister().List(labels.Everything())) },
				get:  func(ns, n string) (runtime.Object, error) { return sa.Lister().ServiceAccounts(ns).Get(n) }},
			kindLister{kind: "ConfigMap",
				list: func() ([]metav1.Object, error) { return objs(cm.Lister().List(labels.Everything())) },
				get:  func(ns, n string) (runtime.Object, error) { return cm.Lister().ConfigMaps(ns).Get(n) }},
			kindLister{kind: "Deployment",
				list: func() ([]metav1.Object, error) { return objs(dep.Lister().List(labels.Everything())) },
				get:  func(ns, n string) (runtime.Object, error) { return dep.Lister().Deployments(ns).Get(n) }},
			kindLister{kind: "Service",
				list: func() ([]metav1.Object, error) { return objs(svc.Lister().List(labels.Everything())) },
				get:  func(ns, n string) (runtime.Object, error) { return svc.Lister().Services(ns).Get(n) }},
			kindLister{kind: "Role",
				list: func() ([]metav1.Object, error) { return objs(role.Lister().List(labels.Everything())) },
				get:  func(ns, n string) (runtime.Object, error) { return role.Lister().Roles(ns).Get(n) }},
			kindLister{kind: "RoleBinding",
				list: func() ([]metav1.Object, error) { return objs(rb.Lister().List(labels.Everything())) },
				get:  func(ns, n string) (runtime.Object, error) { return rb.Lister().RoleBindings(ns).Get(n) }},
		)
		d.factories = append(d.factories, f)
	}
	return d, nil
}

func objs[T metav1.Object](list []T, err error) ([]metav1.Object, error) {
	out := make([]metav1.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out, err
}

// Run watches the deployed objects until ctx ends.
func (d *Deployer) Run(ctx context.Context) {
	for _, f := range d.factories {
		f.Start(ctx.Done())
	}
	<-ctx.Done()
	for _, f := range d.factories {
		f.Shutdown()
	}
}

// Applies is the number of server-side applies made; Deletes the
// number of deployed objects removed.
func (d *Deployer) Applies() int64 { return d.applies.Load() }

// Deletes is the number of deployed objects removed.
func (d *Deployer) Deletes() int64 { return d.deletes.Load() }

func (d *Deployer) hasSynced() bool {
	for _, s := range d.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Sync applies what differs from the rendered objects of every handled,
// managed Gateway (missing, or a field of ours changed: drift), spending a
// token per write and per live read (take false: left for a later pass),
// and removes the objects of a Gateway that is no longer deployed (opted
// out, or of a class not handled any more). Objects of a deleted Gateway
// are left to the garbage collector, through their ownerReference. It
// implements status.Syncer.
//
// It never writes an object it did not make (ownership.go): each object
// is read first, from the informer cache when it is there (the cache
// holds only labelled objects), else live from the API server, since an
// object in the way carries no label and the cache never sees it. An
// object that exists and is not this Gateway's (ownedBy) holds the whole
// Gateway back: none of its objects is applied, the ones made before are
// kept as they are, and Held reports it for the Gateway's status. A write
// to an existing object carries the resourceVersion read, so an object
// whose label or owner changed since is not written (Conflict, read again
// on the next pass).
func (d *Deployer) Sync(ctx context.Context, take func() bool) (int, error) {
	if !d.hasSynced() {
		return 0, nil
	}
	in, err := d.opts.Input()
	if err != nil {
		return 0, err
	}
	ours := map[gw.ObjectName]bool{}
	for _, c := range in.GatewayClasses {
		if string(c.Spec.ControllerName) == d.opts.ControllerName {
			ours[gw.ObjectName(c.Name)] = true
		}
	}
	now := d.opts.Clock.Now()
	var n int
	seen := map[string]bool{}
	want := map[string]bool{}          // "Kind/namespace/name" of every rendered object
	keep := map[types.UID]bool{}       // Gateways whose render failed: their objects stay
	gateways := map[types.UID]string{} // every Gateway seen, by UID: its namespace
	handled := map[types.NamespacedName]bool{}
	for _, g := range in.Gateways {
		gateways[g.UID] = g.Namespace
		if !ours[g.Spec.GatewayClassName] || !gatewayapi.Managed(g) || g.DeletionTimestamp != nil {
			continue
		}
		nn := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
		handled[nn] = true
		gkey := "Gateway/" + g.Namespace + "/" + g.Name
		seen[gkey] = true
		// The ports of the ListenerSets attached to it open on its Service too.
		rg := g
		if extra := gatewayapi.ListenerSetListeners(in, g); len(extra) > 0 {
			rg = g.DeepCopy()
			rg.Spec.Listeners = append(rg.Spec.Listeners, extra...)
		}
		objs, err := Render(rg, d.opts.Render)
		if err != nil {
			keep[g.UID] = true
			d.report(gkey, "Gateway not deployed", err)
			continue
		}
		d.report(gkey, "", nil)
		// All wanted whatever the reads below find, so that what was
		// made before for a Gateway now held back is kept.
		for _, o := range objs.List() {
			k := keyOf(o)
			want[k], seen[k] = true, true
		}
		steps, hold, ready := d.read(ctx, g, objs, take, now)
		if hold != nil {
			d.holds.set(nn, hold)
			d.report(gkey+"/held", "Gateway not deployed: an object of its name is not Wayfinder's", errors.New(hold.Message()))
			seen[gkey+"/held"] = true
			continue
		}
		if !ready {
			continue // a read left for a later pass; what was reported stays
		}
		d.holds.set(nn, nil)
		for _, s := range steps {
			if s.cur != nil && upToDate(s.cur, s.body) {
				continue
			}
			if !take() {
				continue // rate-limited: applied on a later pass
			}
			if err := d.write(ctx, s); err != nil {
				if apierrors.IsConflict(err) {
					// Changed since it was read (a stale cache, or someone
					// else's edit): read again on the next pass.
					d.log.Debug("deployed object changed since read; applied on a later pass", "object", s.key, "error", err)
					continue
				}
				d.report(s.key, "apply failed; will retry", err)
				continue
			}
			d.report(s.key, "", nil)
			d.applies.Add(1)
			n++
		}
	}
	d.holds.keep(handled)
	n += d.removeUnwanted(ctx, take, want, keep, gateways, seen)
	for k := range d.reported {
		if !seen[k] {
			delete(d.reported, k)
		}
	}
	for k := range d.inWay {
		if !seen[k] {
			delete(d.inWay, k)
		}
	}
	return n, nil
}

// step is one rendered object of a Gateway and what is in the cluster
// under its name (cur nil: nothing).
type step struct {
	kind, namespace, name, key string
	body                       map[string]any
	cur                        object
}

// keyOf is "Kind/namespace/name" of a rendered object.
func keyOf(o runtime.Object) string {
	m := o.(metav1.Object)
	return o.GetObjectKind().GroupVersionKind().Kind + "/" + m.GetNamespace() + "/" + m.GetName()
}

// object is what the caches and the API server return.
type object interface {
	runtime.Object
	metav1.Object
}

// inWay is an object found in the way by a live read, and when to read it
// again: it carries no label, so no informer event says it went.
type inWay struct {
	hold Hold
	next time.Time
}

// read finds, for each rendered object of g, what exists under its name:
// the cached object (labelled), else a live read, spending a token. It
// returns the steps to take, or the Hold of the first object in the way,
// or ready false when a read is left for a later pass (rate limit, an
// error of the API server).
func (d *Deployer) read(ctx context.Context, g *gw.Gateway, objs Objects, take func() bool, now time.Time) ([]step, *Hold, bool) {
	var steps []step
	ready := true
	for _, o := range objs.List() {
		m := o.(metav1.Object)
		s := step{kind: o.GetObjectKind().GroupVersionKind().Kind, namespace: m.GetNamespace(), name: m.GetName(), key: keyOf(o)}
		body, err := applyMap(o)
		if err != nil {
			d.report(s.key, "cannot render", err)
			ready = false
			continue
		}
		s.body = body
		if c := d.cached(s.kind, s.namespace, s.name); c != nil {
			s.cur = c
		} else if w, ok := d.inWay[s.key]; ok && now.Before(w.next) {
			return nil, &w.hold, false
		} else {
			if !take() {
				ready = false
				continue
			}
			live, err := d.kinds[s.kind].get(ctx, s.namespace, s.name)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				d.report(s.key, "cannot read; will retry", err)
				ready = false
				continue
			default:
				s.cur = live
			}
		}
		if s.cur != nil {
			if ok, why := ownedBy(s.cur, g); !ok {
				h := Hold{Kind: s.kind, Name: s.name, Why: why}
				d.inWay[s.key] = inWay{hold: h, next: now.Add(d.opts.Recheck)}
				return nil, &h, false
			}
		}
		delete(d.inWay, s.key)
		steps = append(steps, s)
	}
	return steps, nil, ready
}

// Held reports why the proxies of Gateway namespace/name are not deployed
// (an object of their name that Wayfinder does not manage), as of the
// last pass; ok false when nothing holds them. The Gateway API status
// writer makes it the Gateway's Programmed condition.
func (d *Deployer) Held(namespace, name string) (reason, message string, ok bool) {
	h, ok := d.holds.get(types.NamespacedName{Namespace: namespace, Name: name})
	if !ok {
		return "", "", false
	}
	return HeldReason, h.Message(), true
}

// removeUnwanted deletes deployed objects whose Gateway still exists but
// no longer wants them. Only what the deployer made goes: labelled
// ManagedLabel (the informers see nothing else, checked again here) and
// controlled by a Gateway of the same namespace that exists; the delete
// carries the UID and resourceVersion read, so an object changed since
// (a label removed: no longer ours) is not deleted.
func (d *Deployer) removeUnwanted(ctx context.Context, take func() bool, want map[string]bool, keep map[types.UID]bool, gateways map[types.UID]string, seen map[string]bool) int {
	var n int
	for _, l := range d.listers {
		list, err := l.list()
		if err != nil {
			continue
		}
		for _, o := range list {
			key := l.kind + "/" + o.GetNamespace() + "/" + o.GetName()
			if want[key] || o.GetDeletionTimestamp() != nil || o.GetLabels()[ManagedLabel] != ManagedLabelValue {
				continue
			}
			owner := metav1.GetControllerOf(o)
			if owner == nil || !isGatewayRef(*owner) || keep[owner.UID] {
				continue
			}
			if ns, ok := gateways[owner.UID]; !ok || ns != o.GetNamespace() {
				continue // not ours to remove, or left to the garbage collector
			}
			seen[key] = true
			if !take() {
				continue
			}
			if err := d.kinds[l.kind].delete(ctx, o.GetNamespace(), o.GetName(), o.GetUID(), o.GetResourceVersion()); err != nil && !apierrors.IsNotFound(err) {
				if apierrors.IsConflict(err) {
					continue // changed since read: looked at again on the next pass
				}
				d.report(key, "delete failed; will retry", err)
				continue
			}
			d.log.Info("removed the deployment of a Gateway no longer deployed by Wayfinder", "object", key, "gateway", o.GetNamespace()+"/"+owner.Name)
			d.deletes.Add(1)
			n++
		}
	}
	return n
}

// report logs a failure once per object while it lasts (err nil clears).
func (d *Deployer) report(key, msg string, err error) {
	if err == nil {
		delete(d.reported, key)
		return
	}
	if d.reported[key] == err.Error() {
		return
	}
	d.reported[key] = err.Error()
	d.log.Warn(msg, "object", key, "error", err)
}

// cached is the object of a kind under a name in the informer caches
// (which hold only labelled objects), or nil.
func (d *Deployer) cached(kind, namespace, name string) object {
	for _, l := range d.listers {
		if l.kind != kind {
			continue
		}
		if o, err := l.get(namespace, name); err == nil {
			if m, ok := o.(object); ok {
				return m
			}
		}
	}
	return nil
}

// write server-side applies a step's object. An existing object is
// applied with the resourceVersion it was read at, so a change since
// (its label or owner removed) makes the write fail with a Conflict
// instead of taking the object over.
func (d *Deployer) write(ctx context.Context, s step) error {
	body := s.body
	if s.cur != nil {
		meta, _ := body["metadata"].(map[string]any)
		if meta == nil {
			return fmt.Errorf("%s: no metadata", s.key)
		}
		meta["resourceVersion"] = s.cur.GetResourceVersion()
	}
	data, err := jsonOf(body)
	if err != nil {
		return err
	}
	k, ok := d.kinds[s.kind]
	if !ok {
		return fmt.Errorf("unknown kind %s", s.kind)
	}
	return k.apply(ctx, s.namespace, s.name, data)
}
