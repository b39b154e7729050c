package bootstrap

import (
	"net"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
)

// addGatewayDeployer sets up the automated deployment of the proxies of
// handled Gateways, run as part of the Istio status writer (its Lease and
// token bucket): only the leader applies. Nil when turned off or when the
// proxies could not reach Wayfinder (no secure ADS port).
func (m *kubeMode) addGatewayDeployer(opts Options, caPEM []byte) (status.Syncer, error) {
	r := opts.GatewayDeploy
	if r.Disabled || m.gatewayAPI == nil {
		return nil, nil
	}
	if r.XDSAddress == "" {
		_, port, err := net.SplitHostPort(opts.Security.SecureGRPCAddr)
		if opts.Security.SecureGRPCAddr == "" || err != nil || port == "0" {
			opts.Logger.Warn("Gateways are not deployed automatically: no secure ADS port for their proxies to dial (--secure-grpc-addr); give --gateway-xds-address")
			return nil, nil
		}
		r.XDSAddress = net.JoinHostPort("pilot-discovery."+opts.PodNamespace+".svc", port)
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
