package bootstrap

import (
	"slices"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
)

// addGatewayDeployer sets up the automated deployment of the proxies of
// handled Gateways, run as part of the Istio status writer (its Lease and
// token bucket): only the leader applies. Nil when turned off.
func (m *kubeMode) addGatewayDeployer(opts Options, caPEM []byte) (status.Syncer, error) {
	r := opts.GatewayDeploy
	if r.Disabled || m.gatewayAPI == nil {
		return nil, nil
	}
	if r.XDSAddress == "" {
		// The Service of manifests/base, whose port 15012 is the secure
		// ADS port whatever address this replica listens on.
		r.XDSAddress = "pilot-discovery." + opts.PodNamespace + ".svc:15012"
		if opts.Security.SecureGRPCAddr == "" {
			opts.Logger.Warn("the secure ADS port is off here (--secure-grpc-addr), yet deployed Gateway proxies dial it; give --gateway-xds-address if another server serves them",
				"xdsAddress", r.XDSAddress)
		}
	}
	if len(r.RootCertPEM) == 0 {
		r.RootCertPEM = caPEM
	}
	if r.TokenAudience == "" && len(opts.Security.TokenAudiences) > 0 && !slices.Contains(opts.Security.TokenAudiences, "wayfinder") {
		r.TokenAudience = opts.Security.TokenAudiences[0]
	}
	if r.DomainSuffix == "" {
		r.DomainSuffix = opts.DomainSuffix
	}
	d, err := gatewaydeploy.New(gatewaydeploy.DeployerOptions{
		Kube: m.clients.Kube, Namespaces: m.clients.Namespaces, Input: m.gatewayAPI.StatusInput,
		ControllerName: m.gatewayAPI.ConvertOptions().ControllerName, Render: r, Logger: opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	m.gatewayDeployer = d
	return d, nil
}

// defaultProxyConfig is the mesh config's defaultConfig in force, which a
// deployed Gateway's proxy.istio.io/config annotation is merged over, as
// istio-agent merges it (gatewaydeploy.Options.DefaultProxyConfig).
func (m *meshSource) defaultProxyConfig() *meshconfig.ProxyConfig {
	return m.current().Mesh.GetDefaultConfig()
}
