package core

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// meshConfig reads "# mesh-config: YAML" (one line, flow style) from the
// input's header: the mesh config in force, applied onto istiod's
// defaults; nil (istiod's defaults) without it.
func meshConfig(t *testing.T, data []byte) *mesh.Config {
	v, ok := header(data, "mesh-config")
	if !ok {
		return nil
	}
	cfg, err := mesh.Parse(mesh.FileSource("mesh-config header"), []byte(v))
	if err != nil {
		t.Fatalf("mesh-config header: %v", err)
	}
	return cfg
}

// proxyConfig reads "# proxy-config: JSON" from the input's header: the
// ProxyConfig the golden proxy sends as PROXY_CONFIG node metadata; nil
// (none sent) without it.
func proxyConfig(t *testing.T, data []byte) *meshconfig.ProxyConfig {
	v, ok := header(data, "proxy-config")
	if !ok {
		return nil
	}
	pc := &meshconfig.ProxyConfig{}
	if err := protojson.Unmarshal([]byte(v), pc); err != nil {
		t.Fatalf("proxy-config header: %v", err)
	}
	return pc
}
