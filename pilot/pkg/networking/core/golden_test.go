package core

import (
	"bytes"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protopath"
	"google.golang.org/protobuf/reflect/protorange"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/telemetry"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the translators and delete goldens whose input is gone")

// validator is what every generated resource must satisfy.
type validator interface {
	proto.Message
	ValidateAll() error
}

// translation is everything one input produces.
type translation struct {
	gateway  GatewayResources
	services ServiceResources
	errors   []*config.Error
}

// defaultProxyLabels are those of Istio's default ingress gateway.
var defaultProxyLabels = map[string]string{"istio": "ingressgateway"}

// proxyLabels reads "# proxy-labels: k=v,k2=v2" from the input's first
// line; without it the proxy is the default ingress gateway.
func proxyLabels(t *testing.T, data []byte) map[string]string {
	first, _, _ := strings.Cut(string(data), "\n")
	spec, ok := strings.CutPrefix(strings.TrimSpace(first), "# proxy-labels:")
	if !ok {
		return defaultProxyLabels
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(spec), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			t.Fatalf("proxy-labels: %q is not key=value", kv)
		}
		labels[k] = v
	}
	return labels
}

// translate runs the whole pipeline a file-mode control plane runs: parse,
// validate (invalid objects are reported and left out, as the store does),
// index, translate for the proxy.
//
// Kubernetes documents (Ingress, IngressClass, Service, Secret) are read
// as Kubernetes mode reads them: Ingresses converted to Gateways and
// VirtualServices, Services as a registry, Secrets as the secret store.
func translate(t *testing.T, file string, data []byte) translation {
	return translateWith(t, file, data, Caches{})
}

// translateWith is translate with the gateway translated through caches.
func translateWith(t *testing.T, file string, data []byte, caches Caches) translation {
	scope := secretScope(t, data)
	data, kube := splitKube(t, data)
	cfgs, errs := manifest.Parse(file, data, manifest.Options{})
	generated, convErrs := kube.convert()
	cfgs = append(cfgs, generated...)
	errs = append(errs, convErrs...)
	var valid []config.Config
	for _, c := range cfgs {
		if err := validation.Validate(c); err != nil {
			errs = append(errs, config.ErrorsFor(c.Source, c.Key(), err)...)
			continue
		}
		valid = append(valid, c)
	}
	push := model.NewScopedPushContext(model.Scoping{Mesh: meshConfig(t, data)}, memory.New(valid), kube.registries()...)
	errs = append(errs, push.Errors...)
	proxy := &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: proxyLabels(t, data), ProxyConfig: proxyConfig(t, data)}
	if ns, ok := header(data, "proxy-namespace"); ok {
		proxy.Namespace = ns
	}
	// The proxy's view: DestinationRules, services and VirtualServices as
	// its namespace sees them (model.PushContext.ForProxy), and its
	// gateway topology and telemetry, as the server keys its group by them.
	view := push.ForProxy(proxy)
	view = view.WithGatewayTopology(view.GatewayTopologyFor(proxy))
	view = view.WithGatewayTelemetry(telemetry.ForProxy(view, proxy).Gateway())
	tr := translation{
		gateway:  BuildGatewayCached(view, push.GatewaysForProxy(proxy), kube, scope, caches),
		services: BuildServices(view),
	}
	tr.errors = append(append(errs, tr.gateway.Errors...), tr.services.Errors...)
	return tr
}

// render writes the sections in a fixed order, each resource through
// protojson (Envoy's canonical JSON) and then YAML, whose key order is
// sorted, so output is byte-for-byte stable.
func render(t *testing.T, tr translation) []byte {
	var b bytes.Buffer
	golden.Section(t, &b, "listeners", tr.gateway.Listeners)
	golden.Section(t, &b, "routes", tr.gateway.Routes)
	if len(tr.gateway.Secrets) > 0 {
		golden.Section(t, &b, "secrets", tr.gateway.Secrets)
	}
	if len(tr.gateway.UpstreamSecrets) > 0 {
		golden.Section(t, &b, "upstreamSecrets", tr.gateway.UpstreamSecrets)
	}
	golden.Section(t, &b, "clusters", tr.services.Clusters)
	golden.Section(t, &b, "endpoints", tr.services.Endpoints)
	msgs := make([]string, 0, len(tr.errors))
	for _, e := range tr.errors {
		msgs = append(msgs, e.Error())
	}
	golden.WriteYAML(t, &b, "errors", msgs)
	return b.Bytes()
}

// checkResources asserts what Envoy and go-control-plane demand of the
// output: every resource passes its proto validation, names are unique,
// and a snapshot of them is consistent (every RDS name and EDS cluster has
// its resource, and nothing is left over).
func checkResources(t *testing.T, tr translation) {
	resources := map[resourcev3.Type][]types.Resource{}
	add := func(typ resourcev3.Type, name string, m validator) {
		if err := validateDeep(m); err != nil {
			t.Errorf("%s %s fails validation: %v", typ, name, err)
		}
		resources[typ] = append(resources[typ], m)
	}
	names := map[string]bool{}
	unique := func(kind, name string) {
		if names[kind+"/"+name] {
			t.Errorf("duplicate %s %q", kind, name)
		}
		names[kind+"/"+name] = true
	}
	for _, l := range tr.gateway.Listeners {
		unique("listener", l.Name)
		add(resourcev3.ListenerType, l.Name, l)
	}
	for _, r := range tr.gateway.Routes {
		unique("route", r.Name)
		add(resourcev3.RouteType, r.Name, r)
	}
	for _, c := range tr.services.Clusters {
		unique("cluster", c.Name)
		add(resourcev3.ClusterType, c.Name, c)
	}
	for _, e := range tr.services.Endpoints {
		unique("endpoint", e.ClusterName)
		add(resourcev3.EndpointType, e.ClusterName, e)
	}
	var secretNames []string
	for _, s := range tr.gateway.Secrets {
		unique("secret", s.Name)
		add(resourcev3.SecretType, s.Name, s)
		secretNames = append(secretNames, s.Name)
	}
	for _, s := range tr.gateway.UpstreamSecrets {
		unique("upstream secret", s.Name)
		if err := validateDeep(s); err != nil {
			t.Errorf("upstream secret %s fails validation: %v", s.Name, err)
		}
	}
	// go-control-plane does not check SDS references: every secret a
	// listener names must be there (or the listener stays warming), and
	// none other.
	if refs := secretRefs(t, tr); !slices.Equal(refs, secretNames) {
		t.Errorf("listeners reference secrets %v, resources are %v", refs, secretNames)
	}
	snap, err := cachev3.NewSnapshot("1", resources)
	if err != nil {
		t.Fatalf("NewSnapshot: %v", err)
	}
	if err := snap.Consistent(); err != nil {
		t.Errorf("snapshot is not consistent: %v", err)
	}
}

// validateDeep runs ValidateAll on m and on every message packed in an Any
// inside it (an HTTP connection manager, a TLS context), which the
// generated validators do not look into but Envoy does.
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

func TestValidateDeepLooksInsideAny(t *testing.T) {
	bad, err := anypb.New(&hcmv3.HttpConnectionManager{}) // no stat_prefix, no route
	if err != nil {
		t.Fatal(err)
	}
	l := &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
		Name: "hcm", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: bad}}}}}}
	if err := l.ValidateAll(); err != nil {
		t.Fatalf("outer listener should pass its own validation: %v", err)
	}
	if err := validateDeep(l); err == nil {
		t.Error("validateDeep accepted an invalid packed connection manager")
	}
}

func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		tr := translate(t, file, data)
		checkResources(t, tr)
		return render(t, tr)
	})
}

func itoa(i int) string { return strconv.Itoa(i) }
