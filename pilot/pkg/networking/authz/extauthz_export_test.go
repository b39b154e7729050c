package authz

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// ExtAuthzFiltersForTest is buildExtAuthz for package authz_test, whose
// tests run the cluster translator (which may import this package).
func ExtAuthzFiltersForTest(p *meshconfig.MeshConfig_ExtensionProvider, clusters ClusterResolver) (*hcmv3.HttpFilter, *listenerv3.Filter, error) {
	ea, err := buildExtAuthz(p, clusters)
	if err != nil {
		return nil, nil, err
	}
	return ea.http, ea.tcp, nil
}
