package gatewaydeploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gateway"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// DeployerOptions configure a Deployer.
type DeployerOptions struct {
	// Kube applies and watches the deployed objects. Required.
	Kube kclient.Kube
	// Namespaces limits the watch of deployed objects (--watch-namespaces);
	// empty is all.
	Namespaces []string
	// Input reads the Gateway API objects now (gateway.Controller's
	// StatusInput). Required.
	Input func() (gateway.Input, error)
	// ControllerName of the GatewayClasses handled; default
	// gateway.ControllerName.
	ControllerName string
	// Render tunes what is deployed.
	Render Options
	Logger *slog.Logger
}

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
		opts.ControllerName = gateway.ControllerName
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Deployer{opts: opts, log: opts.Logger.With("component", "gateway-deployer"), reported: map[string]string{}}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	selector := labels.SelectorFromSet(labels.Set{ManagedLabel: ManagedLabelValue}).String()
	for _, ns := range namespaces {
		f := kclient.NewKubeFactory(opts.Kube, 0, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
		sa, cm, dep, svc := f.ServiceAccounts(), f.ConfigMaps(), f.Deployments(), f.Services()
		d.synced = append(d.synced, sa.Informer().HasSynced, cm.Informer().HasSynced, dep.Informer().HasSynced, svc.Informer().HasSynced)
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
// token per write (take false: left for a later pass), and removes the
// objects of a Gateway that is no longer deployed (opted out, or of a
// class not handled any more). Objects of a deleted Gateway are left to
// the garbage collector, through their ownerReference. It implements
// status.Syncer.
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
	var n int
	seen := map[string]bool{}
	want := map[string]bool{}        // "Kind/namespace/name" of every rendered object
	keep := map[types.UID]bool{}     // Gateways whose render failed: their objects stay
	gateways := map[types.UID]bool{} // every Gateway seen
	for _, g := range in.Gateways {
		gateways[g.UID] = true
		if !ours[g.Spec.GatewayClassName] || !gateway.Managed(g) || g.DeletionTimestamp != nil {
			continue
		}
		gkey := "Gateway/" + g.Namespace + "/" + g.Name
		seen[gkey] = true
		objs, err := Render(g, d.opts.Render)
		if err != nil {
			keep[g.UID] = true
			d.report(gkey, "Gateway not deployed", err)
			continue
		}
		d.report(gkey, "", nil)
		for _, o := range objs.List() {
			m := o.(metav1.Object)
			kind := o.GetObjectKind().GroupVersionKind().Kind
			key := kind + "/" + m.GetNamespace() + "/" + m.GetName()
			want[key], seen[key] = true, true
			body, err := applyMap(o)
			if err != nil {
				d.report(key, "cannot render", err)
				continue
			}
			if cur := d.get(kind, m.GetNamespace(), m.GetName()); cur != nil && upToDate(cur, body) {
				continue
			}
			if !take() {
				continue // rate-limited: applied on a later pass
			}
			if err := d.apply(ctx, kind, m.GetNamespace(), m.GetName(), body); err != nil {
				d.report(key, "apply failed; will retry", err)
				continue
			}
			d.report(key, "", nil)
			d.applies.Add(1)
			n++
		}
	}
	n += d.removeUnwanted(ctx, take, want, keep, gateways, seen)
	for k := range d.reported {
		if !seen[k] {
			delete(d.reported, k)
		}
	}
	return n, nil
}

// removeUnwanted deletes deployed objects whose Gateway still exists but
// no longer wants them.
func (d *Deployer) removeUnwanted(ctx context.Context, take func() bool, want map[string]bool, keep, gateways map[types.UID]bool, seen map[string]bool) int {
	var n int
	for _, l := range d.listers {
		list, err := l.list()
		if err != nil {
			continue
		}
		for _, o := range list {
			key := l.kind + "/" + o.GetNamespace() + "/" + o.GetName()
			if want[key] || o.GetDeletionTimestamp() != nil {
				continue
			}
			owner := metav1.GetControllerOf(o)
			if owner == nil || owner.Kind != "Gateway" || !gateways[owner.UID] || keep[owner.UID] {
				continue // not ours to remove, or left to the garbage collector
			}
			seen[key] = true
			if !take() {
				continue
			}
			if err := d.delete(ctx, l.kind, o.GetNamespace(), o.GetName(), o.GetUID()); err != nil && !apierrors.IsNotFound(err) {
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

func (d *Deployer) get(kind, namespace, name string) runtime.Object {
	for _, l := range d.listers {
		if l.kind != kind {
			continue
		}
		if o, err := l.get(namespace, name); err == nil {
			return o
		}
	}
	return nil
}

func (d *Deployer) apply(ctx context.Context, kind, namespace, name string, body map[string]any) error {
	data, err := jsonOf(body)
	if err != nil {
		return err
	}
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr(true)}
	c := d.opts.Kube
	switch kind {
	case "ServiceAccount":
		_, err = c.CoreV1().ServiceAccounts(namespace).Patch(ctx, name, types.ApplyPatchType, data, po)
	case "ConfigMap":
		_, err = c.CoreV1().ConfigMaps(namespace).Patch(ctx, name, types.ApplyPatchType, data, po)
	case "Deployment":
		_, err = c.AppsV1().Deployments(namespace).Patch(ctx, name, types.ApplyPatchType, data, po)
	case "Service":
		_, err = c.CoreV1().Services(namespace).Patch(ctx, name, types.ApplyPatchType, data, po)
	default:
		err = fmt.Errorf("unknown kind %s", kind)
	}
	return err
}

func (d *Deployer) delete(ctx context.Context, kind, namespace, name string, uid types.UID) error {
	do := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	c := d.opts.Kube
	switch kind {
	case "ServiceAccount":
		return c.CoreV1().ServiceAccounts(namespace).Delete(ctx, name, do)
	case "ConfigMap":
		return c.CoreV1().ConfigMaps(namespace).Delete(ctx, name, do)
	case "Deployment":
		return c.AppsV1().Deployments(namespace).Delete(ctx, name, do)
	case "Service":
		return c.CoreV1().Services(namespace).Delete(ctx, name, do)
	}
	return fmt.Errorf("unknown kind %s", kind)
}
