package bootstrap

import (
	"fmt"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
)

// addIstioStatus sets up the writer of status on Gateways,
// VirtualServices, DestinationRules and ServiceEntries from the discovery
// server's per-object state. Like Ingress status it needs the pod's
// identity for its Lease; without it nothing is written.
func (m *kubeMode) addIstioStatus(opts Options, ds *xds.DiscoveryServer) error {
	if opts.PodNamespace == "" || opts.PodName == "" {
		opts.Logger.Info("Istio object status is not written: --pod-name and --pod-namespace are not set")
		return nil
	}
	w, err := status.NewIstio(status.IstioOptions{
		Kube: m.clients.Kube, Istio: m.clients.Istio, Namespaces: m.clients.Namespaces, Factories: m.istioInformers,
		State:          ds.ObjectStatus,
		LeaseNamespace: opts.PodNamespace, Identity: opts.PodName, Logger: opts.Logger,
	})
	if err != nil {
		return fmt.Errorf("istio status: %w", err)
	}
	m.istioStatus = w
	return nil
}
