package gatewaydeploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// ProxyConfigAnnotation is istiod's per-pod ProxyConfig override. On a
// Gateway (spec.infrastructure.annotations, or the Gateway's own
// annotations when it has none there, as istiod's deployment controller
// copies them to the pods) it becomes the PROXY_CONFIG node metadata of
// the deployed proxies, as istio-agent sends it: the annotation merged
// over the mesh config's defaultConfig.
const ProxyConfigAnnotation = "proxy.istio.io/config"

// proxyConfig is the PROXY_CONFIG the proxies of g send, or nil when g has
// no ProxyConfigAnnotation: they then send none, and Wayfinder applies
// the mesh config's defaultConfig in force, as istiod does for a node
// without one. With the annotation, the result is what istio-agent
// computes at start (istiod's ApplyProxyConfig): the annotation's fields
// replace defaultConfig's, proxyMetadata merged by key.
func proxyConfig(g *gw.Gateway, opts Options) (*meshconfig.ProxyConfig, error) {
	annotations := g.Annotations
	field := "metadata.annotations"
	if inf := g.Spec.Infrastructure; inf != nil && inf.Annotations != nil {
		annotations = map[string]string{}
		for k, v := range inf.Annotations {
			annotations[string(k)] = string(v)
		}
		field = "spec.infrastructure.annotations"
	}
	v, ok := annotations[ProxyConfigAnnotation]
	if !ok {
		return nil, nil
	}
	fail := func(err error) error {
		return fmt.Errorf("Gateway %s/%s: %s[%s]: %v", g.Namespace, g.Name, field, ProxyConfigAnnotation, err)
	}
	js, err := yaml.YAMLToJSON([]byte(v))
	if err != nil {
		return nil, fail(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, fail(fmt.Errorf("want a ProxyConfig (a mapping of fields): %v", err))
	}
	base := mesh.DefaultMeshConfig()
	if opts.DefaultProxyConfig != nil {
		if d := opts.DefaultProxyConfig(); d != nil {
			base.DefaultConfig = proto.Clone(d).(*meshconfig.ProxyConfig)
		}
	}
	// The mesh config's own merge of defaultConfig is istiod's
	// MergeProxyConfig, which istio-agent applies the annotation with.
	doc, err := json.Marshal(map[string]json.RawMessage{"defaultConfig": js})
	if err != nil {
		return nil, fail(err)
	}
	cfg, err := mesh.Apply(mesh.Source{File: ProxyConfigAnnotation}, doc, base)
	if err != nil {
		return nil, fail(annotationErrors(err))
	}
	return cfg.Mesh.GetDefaultConfig(), nil
}

// annotationErrors restates the mesh config's errors about the wrapped
// defaultConfig in the annotation's own terms: "gatewayTopology.x: ...".
func annotationErrors(err error) error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	msgs := make([]string, 0, len(list))
	for _, e := range list {
		var ce *config.Error
		if !errors.As(e, &ce) {
			msgs = append(msgs, e.Error())
			continue
		}
		field := strings.TrimPrefix(strings.TrimPrefix(ce.Field, "defaultConfig"), ".")
		if field == "" {
			msgs = append(msgs, ce.Message)
			continue
		}
		msgs = append(msgs, field+": "+ce.Message)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// proxyConfigMetadata is pc as the JSON object istio-agent writes into
// the node metadata.
func proxyConfigMetadata(pc *meshconfig.ProxyConfig) (map[string]any, error) {
	js, err := protojson.Marshal(pc)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(js, &out); err != nil {
		return nil, err
	}
	return out, nil
}
