package authz

import (
	"fmt"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// ProviderClusters resolves ext_authz provider services against push, which
// should be the gateway proxy's view (push.ForProxy(proxy)), as istiod's
// model.LookupCluster does: "namespace/hostname" names a service of that
// namespace, "hostname" the one service with that hostname. The cluster is
// the service port's "outbound|PORT||HOST", the one the cluster translator
// builds for it.
//
// Unlike LookupCluster it also fails when the service has no such port:
// the cluster would not exist, and Envoy rejects an ext_authz filter whose
// gRPC service names an unknown cluster, which would take the whole
// listener down. Failing here makes the CUSTOM policy deny instead.
func ProviderClusters(push *model.PushContext) ClusterResolver {
	return func(service string, port uint32) (string, error) {
		if service == "" {
			return "", fmt.Errorf("service must not be empty")
		}
		namespace, host := "", service
		if parts := strings.Split(service, "/"); len(parts) == 2 {
			namespace, host = parts[0], parts[1]
		}
		svc := push.ServiceForHost(host)
		if svc == nil || (namespace != "" && svc.Namespace != namespace) {
			return "", fmt.Errorf("could not find service %s in the service registry", service)
		}
		if _, ok := svc.Port(port); !ok {
			return "", fmt.Errorf("service %s has no port %d", service, port)
		}
		return model.ClusterName(port, "", svc.Hostname), nil
	}
}
