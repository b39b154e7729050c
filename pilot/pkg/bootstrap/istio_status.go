package bootstrap

import (
	"fmt"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
)

// addIstioStatus sets up the writer of status on Gateways,
// VirtualServices, DestinationRules and ServiceEntries from the discovery
// server's per-object state, and, under the same Lease and rate, of the
// Gateway API objects Wayfinder handles. Like Ingress status it needs the pod's
// identity for its Lease; without it nothing is written.
func (m *kubeMode) addIstioStatus(opts Options, ds *xds.DiscoveryServer, caPEM []byte) error {
	if opts.PodNamespace == "" || opts.PodName == "" {
		opts.Logger.Info("Istio object status is not written: --pod-name and --pod-namespace are not set")
		return nil
	}
	var also []status.Syncer
	if m.gatewayAPI != nil {
		// The deployer runs first, so a Gateway it holds back is reported
		// in the same pass.
		d, err := m.addGatewayDeployer(opts, caPEM)
		if err != nil {
			return fmt.Errorf("gateway deployment: %w", err)
		}
		var held func(namespace, name string) (string, string, bool)
		if d != nil {
			also = append(also, d)
			held = m.gatewayDeployer.Held
		}
		g, err := status.NewGatewayAPI(status.GatewayAPIOptions{
			Client: m.gatewayAPI.Client(), Input: m.gatewayAPI.StatusInput, Status: m.gatewayAPI.Status,
			Convert: m.gatewayAPI.ConvertOptions(), Held: held,
		})
		if err != nil {
			return fmt.Errorf("gateway API status: %w", err)
		}
		also = append(also, g)
	}
	w, err := status.NewIstio(status.IstioOptions{
		Kube: m.clients.Kube, Istio: m.clients.Istio, Namespaces: m.clients.Namespaces, Factories: m.istioInformers,
		State: ds.ObjectStatus, Also: also,
		LeaseNamespace: opts.PodNamespace, Identity: opts.PodName, Logger: opts.Logger,
	})
	if err != nil {
		return fmt.Errorf("istio status: %w", err)
	}
	m.istioStatus = w
	return nil
}
