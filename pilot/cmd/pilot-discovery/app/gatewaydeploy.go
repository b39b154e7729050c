package app

import (
	"github.com/spf13/cobra"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
)

// addGatewayDeployFlags adds the flags of gatewaydeploy.Options: how the
// proxies of Gateway API Gateways are deployed.
func addGatewayDeployFlags(cmd *cobra.Command, o *gatewaydeploy.Options) {
	f := cmd.Flags()
	f.BoolVar(&o.Disabled, "disable-gateway-deployment", false, "do not deploy the proxies of Gateway API Gateways (Deployment, Service, ServiceAccount GATEWAY-CLASS); deploy them yourself")
	f.StringVar(&o.Image, "gateway-proxy-image", gatewaydeploy.DefaultImage, "Envoy image of the deployed Gateway proxies")
	f.StringVar(&o.XDSAddress, "gateway-xds-address", "", "host:port the deployed Gateway proxies dial for ADS over TLS (default pilot-discovery.POD_NAMESPACE.svc and the --secure-grpc-addr port)")
	f.StringVar((*string)(&o.ServiceType), "gateway-service-type", "LoadBalancer", "type of each deployed Gateway's Service (ClusterIP, NodePort or LoadBalancer); a Gateway's networking.istio.io/service-type annotation overrides it")
	f.StringVar(&o.ClusterID, "gateway-cluster-id", "Kubernetes", "CLUSTER_ID node metadata of the deployed Gateway proxies")
}
