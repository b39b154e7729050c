package bootstrap

import (
	"fmt"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
)

// IngressOptions configure Kubernetes Ingress support in Kubernetes mode.
type IngressOptions struct {
	// Disabled turns Ingress translation and status writing off.
	Disabled bool
	// Class is the legacy kubernetes.io/ingress.class annotation value
	// handled, besides Ingresses whose IngressClass names the controller
	// wayfinder.io/ingress-controller.
	Class string
	// Service is the gateway Service, "namespace/name", whose addresses
	// are written to status.loadBalancer of handled Ingresses.
	Service string
}

func (o IngressOptions) convert(domainSuffix string) ingress.Options {
	return ingress.Options{IngressClass: o.Class, DomainSuffix: domainSuffix}
}

// addIngress adds the Ingress source, the Secret store for HTTPS
// certificates and, when this replica knows its pod, the leader-elected
// status writer.
func (m *kubeMode) addIngress(opts Options) error {
	c := m.clients
	var err error
	// Certificates are served for Gateways' credentialName whether or not
	// Ingress is on.
	m.secrets, err = ingress.NewSecrets(ingress.SecretsOptions{
		Client: c.Kube, Namespaces: c.Namespaces, Logger: opts.Logger,
		// Informers start in Run, after NewServer has set pushSecret.
		OnChange: func(string, string) { m.pushSecret() },
		// The Gateway API source resolves certificateRefs against the
		// Secrets; it converts again when one it looked up changes. It
		// is built after this store, before the informers start.
		OnAnyChange: func(ns, name string) {
			if m.gatewayAPI != nil {
				m.gatewayAPI.SecretChanged(ns, name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if opts.Ingress.Disabled {
		return nil
	}
	m.ingress, err = ingress.NewController(ingress.ControllerOptions{
		Client: c.Kube, Namespaces: c.Namespaces, Queue: c.Queue, Logger: opts.Logger,
		Convert: opts.Ingress.convert(opts.DomainSuffix),
	})
	if err != nil {
		return fmt.Errorf("ingress: %w", err)
	}
	if opts.PodNamespace == "" || opts.PodName == "" {
		opts.Logger.Info("Ingress status is not written: --pod-name and --pod-namespace are not set")
		return nil
	}
	svcNS, svcName, ok := strings.Cut(opts.Ingress.Service, "/")
	if !ok {
		return fmt.Errorf("--ingress-service %q: want namespace/name", opts.Ingress.Service)
	}
	m.status, err = status.New(status.Options{
		Client: c.Kube, Namespaces: c.Namespaces, Ingress: opts.Ingress.convert(opts.DomainSuffix),
		ServiceNamespace: svcNS, ServiceName: svcName,
		LeaseNamespace: opts.PodNamespace, Identity: opts.PodName, Logger: opts.Logger,
	})
	if err != nil {
		return fmt.Errorf("ingress status: %w", err)
	}
	return nil
}
