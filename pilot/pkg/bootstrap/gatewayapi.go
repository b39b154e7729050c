package bootstrap

import (
	"fmt"

	"k8s.io/client-go/metadata"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gateway"
)

// gatewayAPISource builds the Kubernetes Gateway API source. It always
// exists in Kubernetes mode: when the cluster has no Gateway API CRDs it
// says so once and serves nothing, without holding back readiness.
func gatewayAPISource(c KubeClients, domainSuffix string) (*gateway.Controller, error) {
	client, err := gwclient.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("gateway API client: %w", err)
	}
	// CRDs are watched (metadata only) so that Gateway API kinds installed
	// after start are served without a restart.
	meta, err := metadata.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return gateway.NewController(gateway.ControllerOptions{
		Client: client, Kube: c.Kube, Istio: c.Istio, Metadata: meta, Namespaces: c.Namespaces, Queue: c.Queue, Logger: c.Logger,
		Convert: gateway.Options{DomainSuffix: domainSuffix},
	})
}
