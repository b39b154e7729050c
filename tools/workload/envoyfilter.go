package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvoyFilterFile holds the scenario's EnvoyFilters, which never change
// during a run.
const EnvoyFilterFile = "envoyfilters.yaml"

// writeEnvoyFilters writes EnvoyFilterFile when o asks for EnvoyFilters,
// and removes an earlier one when it does not.
func writeEnvoyFilters(dir string, o Options) error {
	if o.EnvoyFilters == 0 {
		if err := os.Remove(filepath.Join(dir, EnvoyFilterFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("workload: %w", err)
		}
		return nil
	}
	var b bytes.Buffer
	for i := range o.EnvoyFilters {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(EnvoyFilter(i, o.Services))
	}
	return writeFile(dir, EnvoyFilterFile, b.Bytes())
}

// EnvoyFilter is EnvoyFilter ef-i in istio-system, selecting the ingress
// gateway, of the kinds istiod users' gateways carry, by i modulo 5: a
// local rate limit filter before the router (Istio's task), a listener
// buffer limit MERGE, a route timeout MERGE on app-i's virtual host, a
// circuit breaker MERGE on svc-i's cluster, and a Lua filter.
func EnvoyFilter(i, services int) []byte {
	head := fmt.Sprintf(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata:
  name: ef-%d
  namespace: istio-system
spec:
  workloadSelector:
    labels:
      istio: ingressgateway
  configPatches:
`, i)
	var patch string
	switch i % 5 {
	case 0:
		patch = fmt.Sprintf(`  - applyTo: HTTP_FILTER
    match:
      context: GATEWAY
      listener:
        filterChain:
          filter:
            name: envoy.filters.network.http_connection_manager
            subFilter:
              name: envoy.filters.http.router
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.local_ratelimit
        typed_config:
          "@type": type.googleapis.com/udpa.type.v1.TypedStruct
          type_url: type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
          value:
            stat_prefix: rl_%d
            token_bucket:
              max_tokens: 1000
              tokens_per_fill: 1000
              fill_interval: 1s
`, i)
	case 1:
		patch = fmt.Sprintf(`  - applyTo: LISTENER
    match:
      context: GATEWAY
      listener:
        portNumber: 80
    patch:
      operation: MERGE
      value:
        per_connection_buffer_limit_bytes: %d
`, 32768+i)
	case 2:
		patch = fmt.Sprintf(`  - applyTo: HTTP_ROUTE
    match:
      context: GATEWAY
      routeConfiguration:
        vhost:
          name: %s:80
    patch:
      operation: MERGE
      value:
        route:
          timeout: 15s
`, AppHost(i%services))
	case 3:
		patch = fmt.Sprintf(`  - applyTo: CLUSTER
    match:
      context: GATEWAY
      cluster:
        service: %s
    patch:
      operation: MERGE
      value:
        circuit_breakers:
          thresholds:
          - max_connections: 1000
            max_pending_requests: 1000
`, ServiceHost(i%services))
	default:
		patch = fmt.Sprintf(`  - applyTo: HTTP_FILTER
    match:
      context: GATEWAY
      listener:
        filterChain:
          filter:
            name: envoy.filters.network.http_connection_manager
            subFilter:
              name: envoy.filters.http.router
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.lua
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
          default_source_code:
            inline_string: |
              function envoy_on_request(handle)
                handle:headers():add("x-ef", "%d")
              end
`, i)
	}
	return []byte(head + patch)
}
