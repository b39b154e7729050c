package gatewayapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// watchBackendTLS adds the BackendTLSPolicies of namespace ns (all for "")
// to l. Conversion reads their spec, so h is the spec-change handler: the
// status Wayfinder writes on them converts nothing again. The ConfigMaps
// their caCertificateRefs name are read through the lookup conversion
// already has (gatewayapi.Input.ConfigMaps), which converts again on a
// change of a ConfigMap conversion looked up, and of no other.
func (c *Controller) watchBackendTLS(f *kclient.GatewayFactory, ns string, l *lists, h cache.ResourceEventHandler) error {
	inf := f.BackendTLSPolicies()
	l.backendTLS = append(slices.Clone(l.backendTLS), func() ([]*gw.BackendTLSPolicy, error) { return inf.Lister().List(labels.Everything()) })
	return c.Watch("BackendTLSPolicies in "+generated.NamespaceName(ns), inf.Informer(), h)
}
