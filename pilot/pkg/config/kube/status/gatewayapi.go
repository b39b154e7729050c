package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Syncer is another kind of status the IstioWriter writes under its Lease,
// with its token bucket: Sync writes what differs, spending a token per
// write (take false: leave it for a later pass), and returns the number
// of writes.
type Syncer interface {
	Sync(ctx context.Context, take func() bool) (int, error)
}

// GatewayAPIOptions configure a GatewayAPIStatus.
type GatewayAPIOptions struct {
	Client kclient.GatewayAPI
	// Input reads the Gateway API objects now (kube/gatewayapi.Controller's
	// StatusInput): the informer caches, with their current status.
	Input func() (gatewayapi.Input, error)
	// Status returns the computed status (kube/gatewayapi.Controller's Status, of
	// its last conversion). Nil computes it from Input on every pass
	// (gatewayapi.ConvertWithStatus with Convert), as tests do.
	Status  func() gatewayapi.Status
	Convert gatewayapi.Options
	Clock   clock.PassiveClock
	// Held, when set, says why the proxies of a Gateway are not deployed
	// (gatewaydeploy.Deployer's Held: an object of their name that
	// Wayfinder does not manage); the Gateway is then Programmed False
	// with that reason and message, and reports no address (the Service
	// of that name is not its).
	Held func(namespace, name string) (reason, message string, ok bool)
}

// GatewayAPIStatus writes the status Wayfinder computes
// (gatewayapi.ConvertWithStatus) on GatewayClasses, Gateways, ListenerSets
// (listenerset.go), the routes of the four kinds and BackendTLSPolicies
// (status.ancestors, backendtls.go). It is a Syncer: it runs only inside the IstioWriter's
// lead loop, so only the status leader writes, at most at the writer's
// rate. An object is written only when its status changes (conditions
// compared without lastTransitionTime, which is kept while a condition's
// status holds). Of a route's status.parents only the entries whose
// controllerName is Wayfinder's are written; other controllers' entries
// are kept as they are.
type GatewayAPIStatus struct {
	opts GatewayAPIOptions
	// written remembers, per object, the resourceVersion its last write was
	// based on, so a cache that has not seen the write yet causes no
	// second write. Used by the lead loop alone.
	written map[string]string
}

// NewGatewayAPI checks its options.
func NewGatewayAPI(opts GatewayAPIOptions) (*GatewayAPIStatus, error) {
	if opts.Client == nil || opts.Input == nil {
		return nil, errors.New("gateway API status: Client and Input are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &GatewayAPIStatus{opts: opts, written: map[string]string{}}, nil
}

// Sync implements Syncer.
func (g *GatewayAPIStatus) Sync(ctx context.Context, take func() bool) (int, error) {
	in, err := g.opts.Input()
	if err != nil {
		return 0, err
	}
	var st gatewayapi.Status
	if g.opts.Status != nil {
		st = g.opts.Status()
	} else {
		now := g.opts.Clock.Now().Truncate(time.Second) // the API server keeps seconds
		st = gatewayapi.ConvertWithStatus(in, g.opts.Convert, now).Status
	}
	ctrl := gw.GatewayController(gatewayapi.ControllerName)
	if g.opts.Convert.ControllerName != "" {
		ctrl = gw.GatewayController(g.opts.Convert.ControllerName)
	}
	var n int
	var errs []error
	seen := map[string]bool{}
	write := func(key, rv string, same bool, update func() error) {
		seen[key] = true
		if same {
			delete(g.written, key)
			return
		}
		if prev, ok := g.written[key]; ok && prev == rv {
			return // written; the cache has not caught up yet
		}
		if !take() {
			return // rate-limited: written on a later pass
		}
		if err := update(); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
			return
		}
		n++
		g.written[key] = rv
	}
	api := g.opts.Client.GatewayV1()
	for _, o := range in.GatewayClasses {
		want, ok := st.GatewayClasses[o.Name]
		if !ok {
			if !classWasOurs(o, ctrl) {
				continue
			}
			want = gw.GatewayClassStatus{Conditions: pendingConditions(o.Generation, gw.GatewayClassConditionStatusAccepted)}
		}
		want.Conditions = keepTimes(want.Conditions, o.Status.Conditions)
		// status.supportedFeatures: gatewayapi.SupportedFeatures on a class
		// of ours; none once it stops being ours.
		write("GatewayClass/"+o.Name, o.ResourceVersion, apiequality.Semantic.DeepEqual(want, o.Status), func() error {
			cp := o.DeepCopy()
			cp.Status = want
			_, err := api.GatewayClasses().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
	for _, o := range in.Gateways {
		want, ok := st.Gateways[keyOf(o)]
		if !ok {
			if !gatewayWasOurs(o, ctrl) {
				continue
			}
			// No longer ours (class changed or deleted): back to the
			// status of a Gateway no controller has seen.
			want = gw.GatewayStatus{Conditions: pendingConditions(o.Generation,
				gw.GatewayClassConditionStatusAccepted, gw.GatewayClassConditionType(gw.GatewayConditionProgrammed))}
		}
		if ok && g.opts.Held != nil {
			if reason, msg, held := g.opts.Held(o.Namespace, o.Name); held {
				want = heldStatus(want, reason, string(ctrl)+": "+msg)
			}
		}
		want.Conditions = keepTimes(want.Conditions, o.Status.Conditions)
		want.Listeners = keepListenerTimes(want.Listeners, o.Status.Listeners, gatewayListener)
		write("Gateway/"+o.Namespace+"/"+o.Name, o.ResourceVersion, apiequality.Semantic.DeepEqual(want, o.Status), func() error {
			cp := o.DeepCopy()
			cp.Status = want
			_, err := api.Gateways(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
	route := func(kind string, obj metav1.Object, rv string, cur []gw.RouteParentStatus, update func([]gw.RouteParentStatus) error) {
		ours := st.Routes[gatewayapi.RouteKey{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}]
		want := mergeParents(cur, ours, ctrl)
		write(kind+"/"+obj.GetNamespace()+"/"+obj.GetName(), rv, apiequality.Semantic.DeepEqual(want, cur), func() error { return update(want) })
	}
	for _, o := range in.HTTPRoutes {
		route(schema.HTTPRouteKind.Name, o, o.ResourceVersion, o.Status.Parents, func(p []gw.RouteParentStatus) error {
			cp := o.DeepCopy()
			cp.Status.Parents = p
			_, err := api.HTTPRoutes(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
	for _, o := range in.GRPCRoutes {
		route(schema.GRPCRouteKind.Name, o, o.ResourceVersion, o.Status.Parents, func(p []gw.RouteParentStatus) error {
			cp := o.DeepCopy()
			cp.Status.Parents = p
			_, err := api.GRPCRoutes(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
	for _, o := range in.TLSRoutes {
		route(schema.TLSRouteKind.Name, o, o.ResourceVersion, o.Status.Parents, func(p []gw.RouteParentStatus) error {
			cp := o.DeepCopy()
			cp.Status.Parents = p
			_, err := api.TLSRoutes(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
	for _, o := range in.TCPRoutes {
		route(schema.TCPRouteKind.Name, o, o.ResourceVersion, o.Status.Parents, func(p []gw.RouteParentStatus) error {
			cp := o.DeepCopy()
			cp.Status.Parents = p
			_, err := api.TCPRoutes(o.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		})
	}
	g.syncBackendTLS(ctx, in, st, ctrl, write)
	g.syncListenerSets(ctx, in, st, ctrl, write)
	for k := range g.written {
		if !seen[k] {
			delete(g.written, k)
		}
	}
	return n, errors.Join(errs...)
}

// heldStatus is a Gateway's status when its proxies are held back: its
// Programmed condition False with reason and message, and no address. It
// changes copies: st shares its conditions with the conversion's status,
// which /debug/configz reads.
func heldStatus(st gw.GatewayStatus, reason, message string) gw.GatewayStatus {
	st.Addresses = nil
	st.Conditions = slices.Clone(st.Conditions)
	for i, c := range st.Conditions {
		if c.Type == string(gw.GatewayConditionProgrammed) {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, message
			st.Conditions[i] = c
		}
	}
	return st
}

func keyOf(o *gw.Gateway) types.NamespacedName {
	return types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
}

// keepTimes returns want with the lastTransitionTime of each condition
// whose type and status are unchanged since cur.
// keepListenerTimes is keepTimes for each listener of want and the one of
// cur of the same name, on a copy: want shares its listeners with the
// conversion's status, which /debug/configz reads. key gives a listener
// status's name and conditions (Gateways and ListenerSets have their own
// listener status types).
func keepListenerTimes[L any](want, cur []L, key func(*L) (gw.SectionName, *[]metav1.Condition)) []L {
	out := slices.Clone(want)
	for i := range out {
		name, conds := key(&out[i])
		for j := range cur {
			if n, c := key(&cur[j]); n == name {
				*conds = keepTimes(*conds, *c)
			}
		}
	}
	return out
}

func gatewayListener(l *gw.ListenerStatus) (gw.SectionName, *[]metav1.Condition) {
	return l.Name, &l.Conditions
}

func setListener(l *gw.ListenerEntryStatus) (gw.SectionName, *[]metav1.Condition) {
	return l.Name, &l.Conditions
}

func keepTimes(want, cur []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, len(want))
	for i, c := range want {
		for _, p := range cur {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		out[i] = c
	}
	return out
}

// mergeParents keeps the entries of other controllers in place and puts
// ours (computed) after them, each with the transition times of the
// entry it replaces. Nil stays nil when there is nothing.
func mergeParents(cur, ours []gw.RouteParentStatus, ctrl gw.GatewayController) []gw.RouteParentStatus {
	var out []gw.RouteParentStatus
	for _, p := range cur {
		if p.ControllerName != ctrl {
			out = append(out, p)
		}
	}
	for _, p := range ours {
		for _, c := range cur {
			if c.ControllerName == ctrl && apiequality.Semantic.DeepEqual(c.ParentRef, p.ParentRef) {
				p.Conditions = keepTimes(p.Conditions, c.Conditions)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 && cur != nil {
		return cur[:0]
	}
	return out
}
