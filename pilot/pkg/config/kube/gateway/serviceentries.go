package gateway

import (
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioinformers "istio.io/client-go/pkg/informers/externalversions"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// istioServiceEntriesServed reports whether the API server serves
// ServiceEntries (networking.istio.io/v1): without the CRD, a watch would
// never sync and hold back readiness.
func (c *Controller) istioServiceEntriesServed() bool {
	res, err := c.opts.Kube.Discovery().ServerResourcesForGroupVersion(IstioGroup + "/v1")
	if err != nil {
		c.log.Info("Istio ServiceEntries are not served; backendRefs of kind Hostname find no host", "error", err)
		return false
	}
	for _, r := range res.APIResources {
		if r.Name == "serviceentries" {
			return true
		}
	}
	c.log.Info("Istio ServiceEntries are not served; backendRefs of kind Hostname find no host")
	return false
}

// watchServiceEntries watches the ServiceEntries of ns ("" for all) that
// backendRefs of kind Hostname name, when an Istio client is given and the
// CRD is served, and returns how to list them. h is the spec-change
// handler: the Istio status writer's updates convert nothing again.
func (c *Controller) watchServiceEntries(ns string, h cache.ResourceEventHandler) (generated.Factory, func() ([]*istionetworkingv1.ServiceEntry, error), error) {
	f := istioinformers.NewSharedInformerFactoryWithOptions(c.opts.Istio, 0, istioinformers.WithNamespace(ns))
	inf := f.Networking().V1().ServiceEntries()
	if err := c.Watch("ServiceEntries in "+generated.NamespaceName(ns), inf.Informer(), h); err != nil {
		return nil, nil, err
	}
	return f, func() ([]*istionetworkingv1.ServiceEntry, error) { return inf.Lister().List(labels.Everything()) }, nil
}

// serviceEntryConfigs turns ServiceEntry objects into the configs
// conversion reads (namespace, name, age and spec).
func serviceEntryConfigs(in []*istionetworkingv1.ServiceEntry) []config.Config {
	out := make([]config.Config, 0, len(in))
	for _, se := range in {
		out = append(out, config.Config{
			Meta: config.Meta{Kind: schema.ServiceEntry, Namespace: se.Namespace, Name: se.Name,
				CreationTimestamp: se.CreationTimestamp.Time},
			Spec: &se.Spec,
		})
	}
	return out
}
