package gatewayapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// watchListenerSets watches the ListenerSets of namespace ns ("" for all)
// when their CRD is served: their listeners join their parent Gateways'
// in conversion, so a spec change reconverts like a Gateway's.
func (c *Controller) watchListenerSets(f *kclient.GatewayFactory, ns string, l *lists, h cache.ResourceEventHandler) error {
	inf := f.ListenerSets()
	l.listenerSets = append(slices.Clone(l.listenerSets), func() ([]*gw.ListenerSet, error) { return inf.Lister().List(labels.Everything()) })
	return c.Watch("ListenerSets in "+generated.NamespaceName(ns), inf.Informer(), h)
}
