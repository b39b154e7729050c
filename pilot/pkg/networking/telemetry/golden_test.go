package telemetry

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protopath"
	"google.golang.org/protobuf/reflect/protorange"
	meshconfig "istio.io/api/mesh/v1alpha1"
	telemetryv1 "istio.io/api/telemetry/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from Build and delete goldens whose input is gone")

// caseInput is the YAML of one golden case: a mesh config, Telemetry
// objects and a proxy.
type caseInput struct {
	// Mesh is MeshConfig YAML, as a mesh config file holds it.
	Mesh          string `json:"mesh"`
	RootNamespace string `json:"rootNamespace"`
	Proxy         struct {
		Namespace      string            `json:"namespace"`
		Labels         map[string]string `json:"labels"`
		GatewayName    string            `json:"gatewayName"`
		ServiceCluster string            `json:"serviceCluster"`
		MeshID         string            `json:"meshID"`
		ClusterID      string            `json:"clusterID"`
		IstioVersion   string            `json:"istioVersion"`
		// ProxyConfig is the PROXY_CONFIG metadata (ProxyConfig YAML).
		ProxyConfig json.RawMessage `json:"proxyConfig"`
	} `json:"proxy"`
	// Services maps hostnames to the namespaces that have them; absent,
	// every provider service is taken to exist.
	Services map[string][]string `json:"services"`
	Env      map[string]string   `json:"env"`
	// Telemetries are Telemetry objects; created is RFC 3339.
	Telemetries []struct {
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Created   string          `json:"created"`
		Spec      json.RawMessage `json:"spec"`
	} `json:"telemetries"`
}

func parseCase(t *testing.T, file string, data []byte) Input {
	t.Helper()
	var c caseInput
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cfg, err := mesh.Parse(mesh.FileSource(file+"#mesh"), []byte(c.Mesh))
	if err != nil {
		t.Fatalf("mesh config: %v", err)
	}
	in := Input{Mesh: cfg, RootNamespace: c.RootNamespace}
	p := c.Proxy
	in.Proxy = Proxy{
		Namespace: p.Namespace, Labels: p.Labels, GatewayName: p.GatewayName, ServiceCluster: p.ServiceCluster,
		MeshID: p.MeshID, ClusterID: p.ClusterID, IstioVersion: p.IstioVersion,
	}
	if len(p.ProxyConfig) > 0 {
		in.Proxy.ProxyConfig = &meshconfig.ProxyConfig{}
		if err := protojson.Unmarshal(p.ProxyConfig, in.Proxy.ProxyConfig); err != nil {
			t.Fatalf("proxy.proxyConfig: %v", err)
		}
	}
	if c.Services != nil {
		in.Services = func(host string) []string { return c.Services[host] }
	}
	if c.Env != nil {
		in.Getenv = func(name string) string { return c.Env[name] }
	}
	for i, tel := range c.Telemetries {
		spec := &telemetryv1.Telemetry{}
		if err := protojson.Unmarshal(tel.Spec, spec); err != nil {
			t.Fatalf("telemetries[%d].spec: %v", i, err)
		}
		created, err := time.Parse(time.RFC3339, tel.Created)
		if err != nil {
			t.Fatalf("telemetries[%d].created: %v", i, err)
		}
		in.Telemetries = append(in.Telemetries, Telemetry{Name: tel.Name, Namespace: tel.Namespace, CreationTime: created, Spec: spec})
	}
	return in
}

// TestGolden builds each testdata/*.in.yaml and records the decision and
// every generated proto; each input's leading comment (copied into its
// golden) names the istiod function the case follows.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		r := Build(parseCase(t, file, data))
		checkValid(t, r)
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			b.WriteString(line)
		}
		golden.WriteYAML(t, &b, "decision", []Decision{r.Decision})
		golden.Section(t, &b, "httpAccessLogs", r.HTTPAccessLogs)
		golden.Section(t, &b, "tcpAccessLogs", r.TCPAccessLogs)
		golden.Section(t, &b, "listenerAccessLogs", r.ListenerAccessLogs)
		var tracing []*hcmv3.HttpConnectionManager_Tracing
		if r.Tracing != nil {
			tracing = append(tracing, r.Tracing)
		}
		golden.Section(t, &b, "tracing", tracing)
		golden.Section(t, &b, "requestIdExtension", []*hcmv3.RequestIDExtension{r.RequestIDExtension})
		golden.WriteYAML(t, &b, "clusters", nonNil(r.Clusters))
		problems := []string{}
		for _, e := range r.Problems {
			sev := "error"
			if e.Warning {
				sev = "warning"
			}
			problems = append(problems, sev+": "+e.Error())
		}
		golden.WriteYAML(t, &b, "problems", problems)
		return b.Bytes()
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// validator is what every generated proto must satisfy.
type validator interface {
	proto.Message
	ValidateAll() error
}

func checkValid(t *testing.T, r Result) {
	t.Helper()
	var all []validator
	for _, list := range [][]*accesslogv3.AccessLog{r.HTTPAccessLogs, r.TCPAccessLogs, r.ListenerAccessLogs} {
		for _, a := range list {
			all = append(all, a)
		}
	}
	if r.Tracing != nil {
		all = append(all, r.Tracing)
	}
	if r.RequestIDExtension == nil {
		t.Error("no request ID extension")
	} else {
		all = append(all, r.RequestIDExtension)
	}
	for _, m := range all {
		if err := validateDeep(m); err != nil {
			t.Errorf("%T: %v", m, err)
		}
	}
}

// validateDeep runs ValidateAll on m and on every message packed in an
// Any inside it, which m's own validation does not look into.
func validateDeep(m validator) error {
	if err := m.ValidateAll(); err != nil {
		return err
	}
	return protorange.Range(m.ProtoReflect(), func(p protopath.Values) error {
		last := p.Index(-1)
		if last.Step.Kind() != protopath.AnyExpandStep {
			return nil
		}
		inner, ok := last.Value.Message().Interface().(validator)
		if !ok {
			return fmt.Errorf("%s: packed %s has no validator", p.Path[1:], last.Value.Message().Descriptor().FullName())
		}
		if err := inner.ValidateAll(); err != nil {
			return fmt.Errorf("%s: %w", p.Path[1:], err)
		}
		return nil
	})
}
