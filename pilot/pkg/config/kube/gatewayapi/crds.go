package gatewayapi

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	cfgschema "github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// crdResource is apiextensions.k8s.io/v1 CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Retry bounds for a Gateway API CRD that exists but whose kind discovery
// does not serve yet (not yet Established).
const (
	crdRetryMin = 250 * time.Millisecond
	crdRetryMax = 30 * time.Second
)

// lateWatches is what watchCRDs runs; wait returns once it has stopped.
type lateWatches struct{ wg sync.WaitGroup }

func (l *lateWatches) wait() { l.wg.Wait() }

// watchCRDs watches CustomResourceDefinitions (metadata only) and, when a
// Gateway API CRD is added or changes (it becomes Established), asks
// discovery again and starts informers for the kinds newly served. It is
// not one of the watches the first sync waits for: readiness never waits
// on it, and where RBAC refuses it, one log line says that CRDs installed
// later wait for a restart.
func (c *Controller) watchCRDs(ctx context.Context) *lateWatches {
	lw := &lateWatches{}
	if c.opts.Metadata == nil {
		return lw
	}
	clk := c.opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	crdNames := map[string]bool{}
	for _, k := range cfgschema.GatewayAPIKinds() {
		crdNames[k.CRDName()] = true
	}
	inf := kclient.NewInformer(c.opts.Metadata.Resource(crdResource), &metav1.PartialObjectMetadata{}, 0, nil, c.opts.Metadata)
	kick := make(chan struct{}, 1)
	notify := func(obj any) {
		if m, ok := obj.(metav1.Object); ok && crdNames[m.GetName()] {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
	var denied atomic.Bool
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !denied.Swap(true) {
				c.log.Warn("cannot watch CustomResourceDefinitions (RBAC); a Gateway API CRD installed later is picked up at the next restart", "error", err)
			}
			return
		}
		c.log.Debug("CustomResourceDefinition watch failed; retrying", "error", err)
	})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, n any) { notify(n) },
	}); err != nil {
		c.log.Error("cannot watch CustomResourceDefinitions", "error", err)
		return lw
	}
	lw.wg.Go(func() { inf.Run(ctx.Done()) })
	lw.wg.Go(func() { c.addLateKinds(ctx, clk, kick, inf.GetStore(), crdNames) })
	return lw
}

// addLateKinds runs until ctx ends: on every kick it watches the kinds
// newly served, and while a Gateway API CRD exists whose kind is not
// served yet, it looks again with backoff.
func (c *Controller) addLateKinds(ctx context.Context, clk clock.WithTicker, kick <-chan struct{}, crds cache.Store, crdNames map[string]bool) {
	var factories []generated.Factory
	defer func() {
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	var retry time.Duration
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-again:
		}
		again = nil
		fs, err := c.watch(c.servedKinds(false), false)
		if err != nil {
			c.log.Error("Gateway API kind not watched", "error", err)
		}
		for _, f := range fs {
			f.Start(ctx.Done())
		}
		factories = append(factories, fs...)
		if c.unservedCRD(crds, crdNames) {
			retry = min(max(2*retry, crdRetryMin), crdRetryMax)
			again = clk.After(retry)
		} else {
			retry = 0
		}
	}
}

// unservedCRD reports whether a Gateway API CRD exists whose kind is not
// watched yet.
func (c *Controller) unservedCRD(crds cache.Store, crdNames map[string]bool) bool {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	for _, obj := range crds.List() {
		m, ok := obj.(metav1.Object)
		if !ok || !crdNames[m.GetName()] {
			continue
		}
		k, ok := cfgschema.GatewayAPIByPlural(plural(m.GetName()))
		if ok && !c.watched[k.Plural] {
			return true
		}
	}
	return false
}

// plural is the resource of a CRD name "PLURAL.GROUP".
func plural(crdName string) string {
	p, _, _ := strings.Cut(crdName, ".")
	return p
}
