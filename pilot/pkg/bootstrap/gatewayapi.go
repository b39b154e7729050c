package bootstrap

import (
	"fmt"

	"k8s.io/client-go/metadata"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	kubegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// istioStore is the Istio config store (crdclient) as the Gateway API
// source reads it.
type istioStore interface {
	model.ConfigStoreController
	Synced() <-chan struct{}
}

// gatewayAPISource builds the Kubernetes Gateway API source. It always
// exists in Kubernetes mode: when the cluster has no Gateway API CRDs it
// says so once and serves nothing, without holding back readiness.
// Hostname backends are looked up in istio, the Istio config store, whose
// ServiceEntry changes schedule a conversion. deploys says the deployer
// is on: the Secrets of the Gateways it deploys go to the proxies running
// as the ServiceAccount it made for each.
func gatewayAPISource(c KubeClients, domainSuffix string, deploys bool, istio istioStore, secrets *ingress.Secrets) (*kubegatewayapi.Controller, error) {
	// CRDs are watched (metadata only) so that Gateway API kinds installed
	// after start are served without a restart.
	meta, err := metadata.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	gc, err := kubegatewayapi.NewController(kubegatewayapi.ControllerOptions{
		Client: c.GatewayAPI, Kube: c.Kube, Metadata: meta, Namespaces: c.Namespaces, Queue: c.Queue, Logger: c.Logger,
		ServiceEntries:       func() []config.Config { return istio.List(schema.ServiceEntry, "") },
		ServiceEntriesSynced: istio.Synced(),
		// certificateRefs resolve against the SDS store's Secrets, which
		// call SecretChanged (addIngress).
		Secrets:       secrets.Get,
		SecretsSynced: secrets.WaitForSync,
		Convert:       gatewayapi.Options{DomainSuffix: domainSuffix, DeploysProxies: deploys},
	})
	if err != nil {
		return nil, err
	}
	istio.RegisterEventHandler(schema.ServiceEntry, func(config.Config, config.Config, model.Event) { gc.Schedule() })
	return gc, nil
}
