// Package gatewayapicrds embeds the Gateway API CustomResourceDefinitions
// of this folder (standard channel, sigs.k8s.io/gateway-api v1.6.3, copied
// unchanged by `make gateway-api-crds`), so that file mode checks Gateway
// API YAML against the very schemas a Kubernetes API server would.
package gatewayapicrds

import "embed"

// FS holds gateway.networking.k8s.io_*.yaml.
//
//go:embed gateway.networking.k8s.io_*.yaml
var FS embed.FS
