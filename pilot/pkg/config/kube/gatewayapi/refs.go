package gatewayapi

import (
	"bytes"
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Secrets and ConfigMaps are read by conversion (gatewayapi.Input.Secrets
// resolves certificateRefs, Input.ConfigMaps parametersRef and CA
// bundles), but only a few of them matter: those the last conversion
// looked up (gatewayapi.Result.Referenced). A change of one of those
// converts again; a change of any other (ServiceAccount tokens, Helm
// releases, leader-election ConfigMaps) converts nothing.
//
// Secrets come from the control plane's one Secret informer (the SDS
// store, ingress.Secrets), handed in as ControllerOptions.Secrets, whose
// owner calls SecretChanged for each change: Secrets are not watched
// twice. ConfigMaps are watched here.

// SecretChanged is called (from an informer goroutine) when Secret
// namespace/name is added, changed (type or data) or deleted; it converts
// again when the last conversion looked that Secret up.
func (c *Controller) SecretChanged(namespace, name string) {
	c.mu.RLock()
	ref := c.referenced.Secret(namespace, name)
	c.mu.RUnlock()
	if ref {
		c.Schedule()
	}
}

// configMapChanged converts again when the last conversion looked up
// ConfigMap namespace/name.
func (c *Controller) configMapChanged(namespace, name string) {
	c.mu.RLock()
	ref := c.referenced.ConfigMap(namespace, name)
	c.mu.RUnlock()
	if ref {
		c.Schedule()
	}
}

// watchConfigMaps adds the ConfigMaps of namespace ns (all for "") to l,
// converting again on a change of the data of one conversion looked up.
func (c *Controller) watchConfigMaps(kf *kclient.KubeFactory, ns string, l *lists) error {
	inf := kf.ConfigMaps()
	if l.configMaps == nil {
		l.configMaps = map[string]listerscorev1.ConfigMapLister{}
	}
	l.configMaps[ns] = inf.Lister()
	changed := func(o any) {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if cm, ok := o.(*corev1.ConfigMap); ok {
			c.configMapChanged(cm.Namespace, cm.Name)
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(o, n any) {
			a, aok := o.(*corev1.ConfigMap)
			b, bok := n.(*corev1.ConfigMap)
			if !aok || !bok || !maps.Equal(a.Data, b.Data) || !maps.EqualFunc(a.BinaryData, b.BinaryData, bytes.Equal) {
				changed(n)
			}
		},
		DeleteFunc: changed,
	}
	return c.Watch("ConfigMaps in "+generated.NamespaceName(ns), inf.Informer(), h)
}

// configMapLookup reads ConfigMaps from l's informers; nil when none is
// watched.
func configMapLookup(l lists) func(namespace, name string) *corev1.ConfigMap {
	if l.configMaps == nil {
		return nil
	}
	return func(namespace, name string) *corev1.ConfigMap {
		cl, ok := l.configMaps[namespace]
		if !ok {
			cl, ok = l.configMaps[""]
		}
		if !ok {
			return nil
		}
		cm, err := cl.ConfigMaps(namespace).Get(name)
		if err != nil {
			return nil
		}
		return cm
	}
}

// waitForReferences holds the first conversion (the generated.Source's
// After) until the Istio store's ServiceEntries and the Secret informer
// have synced, so that it does not report every certificate missing
// before the Secrets were listed.
func (c *Controller) waitForReferences(ctx context.Context) {
	defer close(c.after)
	if c.opts.ServiceEntriesSynced != nil {
		select {
		case <-c.opts.ServiceEntriesSynced:
		case <-ctx.Done():
			return
		}
	}
	if c.opts.SecretsSynced != nil {
		c.opts.SecretsSynced(ctx)
	}
}
