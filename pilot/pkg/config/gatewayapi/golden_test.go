package gatewayapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml and delete goldens whose input is gone")

// input is one golden input: Gateway API objects, Services and
// Namespaces, as a Kubernetes-mode control plane reads them.
type input struct {
	kube       gatewayapi.Input
	services   map[string]*corev1.Service
	namespaces map[string]map[string]string
	secrets    map[string]map[string][]byte
	configMaps []*corev1.ConfigMap
	// istio are Istio Gateways and VirtualServices of the input.
	istio []config.Config
}

var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func decode(t *testing.T, data []byte) input {
	t.Helper()
	in := input{services: map[string]*corev1.Service{}, namespaces: map[string]map[string]string{}, secrets: map[string]map[string][]byte{}}
	secretObjs := map[string]*corev1.Secret{}
	for i, doc := range documentSeparator.Split(string(data), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		var into any
		switch head.APIVersion + " " + head.Kind {
		case " ":
			continue // comments only
		case "gateway.networking.k8s.io/v1 GatewayClass":
			o := &gw.GatewayClass{}
			in.kube.GatewayClasses, into = append(in.kube.GatewayClasses, o), o
		case "gateway.networking.k8s.io/v1 Gateway":
			o := &gw.Gateway{}
			in.kube.Gateways, into = append(in.kube.Gateways, o), o
		case "gateway.networking.k8s.io/v1 HTTPRoute":
			o := &gw.HTTPRoute{}
			in.kube.HTTPRoutes, into = append(in.kube.HTTPRoutes, o), o
		case "gateway.networking.k8s.io/v1 GRPCRoute":
			o := &gw.GRPCRoute{}
			in.kube.GRPCRoutes, into = append(in.kube.GRPCRoutes, o), o
		case "gateway.networking.k8s.io/v1 TLSRoute":
			o := &gw.TLSRoute{}
			in.kube.TLSRoutes, into = append(in.kube.TLSRoutes, o), o
		case "gateway.networking.k8s.io/v1 TCPRoute":
			o := &gw.TCPRoute{}
			in.kube.TCPRoutes, into = append(in.kube.TCPRoutes, o), o
		case "gateway.networking.k8s.io/v1 ReferenceGrant":
			o := &gw.ReferenceGrant{}
			in.kube.ReferenceGrants, into = append(in.kube.ReferenceGrants, o), o
		case "gateway.networking.k8s.io/v1 ListenerSet":
			o := &gw.ListenerSet{}
			in.kube.ListenerSets, into = append(in.kube.ListenerSets, o), o
		case "gateway.networking.k8s.io/v1 BackendTLSPolicy":
			o := &gw.BackendTLSPolicy{}
			in.kube.BackendTLSPolicies, into = append(in.kube.BackendTLSPolicies, o), o
		case "v1 ConfigMap":
			o := &corev1.ConfigMap{}
			in.configMaps = append(in.configMaps, o)
			into = o
		case "v1 Service":
			into = &corev1.Service{}
		case "v1 Namespace":
			into = &corev1.Namespace{}
		case "v1 Secret":
			into = &corev1.Secret{}
		case "networking.istio.io/v1 ServiceEntry":
			ses, errs := manifest.Parse("golden", []byte(doc), manifest.Options{})
			if len(errs) > 0 || len(ses) != 1 {
				t.Fatalf("document %d: %v", i+1, errs)
			}
			in.kube.ServiceEntries = append(in.kube.ServiceEntries, ses...)
			continue
		case "networking.istio.io/v1 Gateway", "networking.istio.io/v1 VirtualService":
			// Istio objects beside the generated ones, as the Istio
			// store holds them: served with them, not converted.
			cfgs, errs := manifest.Parse(fmt.Sprintf("document %d", i+1), []byte(doc), manifest.Options{})
			if len(errs) > 0 || len(cfgs) != 1 {
				t.Fatalf("document %d: %v", i+1, errs)
			}
			in.istio = append(in.istio, cfgs...)
			continue
		default:
			t.Fatalf("document %d: %s %s is not a golden input kind", i+1, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		switch o := into.(type) {
		case *corev1.Service:
			in.services[o.Namespace+"/"+o.Name] = o
		case *corev1.Namespace:
			in.namespaces[o.Name] = o.Labels
		case *corev1.Secret:
			data := maps.Clone(o.Data)
			if data == nil {
				data = map[string][]byte{}
			}
			for k, v := range o.StringData {
				data[k] = []byte(v)
			}
			in.secrets[o.Namespace+"/"+o.Name] = data
			sec := o.DeepCopy()
			sec.Data, sec.StringData = data, nil
			secretObjs[o.Namespace+"/"+o.Name] = sec
		}
	}
	in.kube.Services = func(ns, name string) *corev1.Service { return in.services[ns+"/"+name] }
	// certificateRefs are resolved against the input's Secrets, as the
	// Kubernetes source resolves them against its informer's.
	in.kube.Secrets = func(ns, name string) *corev1.Secret { return secretObjs[ns+"/"+name] }
	in.kube.Namespaces = func(name string) map[string]string { return in.namespaces[name] }
	if len(in.configMaps) > 0 {
		// The input's ConfigMaps (BackendTLSPolicy CAs); without any, no
		// lookup, as in file mode.
		in.kube.ConfigMaps = func(ns, name string) *corev1.ConfigMap {
			for _, cm := range in.configMaps {
				if cm.Namespace == ns && cm.Name == name {
					return cm
				}
			}
			return nil
		}
	}
	in.kube.NamespaceNames = func() []string { return slices.Sorted(maps.Keys(in.namespaces)) }
	return in
}

// Services is the registry of the input's Services: ports with the
// protocol their name announces, no endpoints.
func (in input) Services() []*model.Service {
	var out []*model.Service
	for _, key := range slices.Sorted(maps.Keys(in.services)) {
		s := in.services[key]
		svc := &model.Service{Hostname: s.Name + "." + s.Namespace + ".svc.cluster.local", Namespace: s.Namespace,
			Source: config.Key{Namespace: s.Namespace, Name: s.Name}, CreationTimestamp: s.CreationTimestamp.Time}
		for _, p := range s.Spec.Ports {
			proto, _, _ := strings.Cut(strings.ToUpper(p.Name), "-")
			if !model.IsHTTPProtocol(proto) {
				proto = "TCP"
			}
			svc.Ports = append(svc.Ports, model.Port{Name: p.Name, Number: uint32(p.Port), Protocol: proto})
		}
		out = append(out, svc)
	}
	return out
}

// proxy reads "# proxy: NAMESPACE/GATEWAY" from the input's first line: a
// gateway proxy of that namespace labelled with that Gateway's name.
func proxy(t *testing.T, data []byte) *model.Proxy {
	first, _, _ := strings.Cut(string(data), "\n")
	spec, ok := strings.CutPrefix(strings.TrimSpace(first), "# proxy:")
	ns, name, ok2 := strings.Cut(strings.TrimSpace(spec), "/")
	if !ok || !ok2 {
		t.Fatalf("first line must be '# proxy: NAMESPACE/GATEWAY', is %q", first)
	}
	return &model.Proxy{Type: model.Router, Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: name}}
}

// produce converts, validates (a generated config that fails validation
// fails the test: conversion must not emit what the store would refuse),
// and translates for the proxy with the shared translator.
func produce(t *testing.T, file string, data []byte) []byte {
	in := decode(t, data)
	conv := gatewayapi.ConvertWithStatus(in.kube, gatewayapi.Options{}, goldenNow)
	cfgs, errs := conv.Configs, conv.Errors
	for _, c := range cfgs {
		if err := validation.Validate(c); err != nil {
			t.Errorf("generated %s fails validation: %v", c.Key(), err)
		}
	}
	push := model.NewPushContext(memory.New(slices.Concat(cfgs, in.kube.ServiceEntries, in.istio)), in)
	secrets := model.SecretStoreFunc(func(ns, name string) ([]byte, []byte, bool) {
		return model.TLSKeyPair(in.secrets[ns+"/"+name])
	})
	// The gateway proxy as it connects on the secure port: verified in its
	// own namespace, so its Gateways' Secrets are its to have.
	p := proxy(t, data)
	scope := model.SecretScope{Identity: &model.Identity{Namespace: p.Namespace, ServiceAccount: "gateway", Method: model.MethodToken}, Grants: conv.SecretGrants}
	res := core.BuildGatewayWithSecrets(push, push.GatewaysForProxy(p), secrets, scope)
	for _, r := range res.Routes {
		if err := r.ValidateAll(); err != nil {
			t.Errorf("route %s fails validation: %v", r.Name, err)
		}
	}
	for _, l := range res.Listeners {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("listener %s fails validation: %v", l.Name, err)
		}
	}
	var b bytes.Buffer
	golden.WriteYAML(t, &b, "configs", renderConfigs(t, cfgs))
	if strings.Contains(file, "stream") || strings.Contains(file, "policies") || strings.Contains(file, "frontend") {
		// TLS and TCP routes live in the listeners; so does the stateful
		// session filter of sessionPersistence, and the CA verifying
		// client certificates (frontend-tls).
		golden.Section(t, &b, "listeners", res.Listeners)
	}
	golden.Section(t, &b, "routes", res.Routes)
	if strings.Contains(file, "backendtls") {
		// Upstream TLS lives in the clusters (backendtls_test.go).
		b.Write(backendTLSClusters(t, push))
	}
	if strings.Contains(file, "tls") || strings.Contains(file, "listenerset") {
		// Which Secrets the proxy is sent (names only: no key material).
		names := []string{}
		for _, s := range res.Secrets {
			names = append(names, s.GetName())
		}
		golden.WriteYAML(t, &b, "secrets", names)
	}
	msgs := []string{}
	for _, e := range append(append(errs, push.Errors...), res.Errors...) {
		msgs = append(msgs, e.Error())
	}
	golden.WriteYAML(t, &b, "errors", msgs)
	golden.WriteYAML(t, &b, "status", renderStatus(conv.Status))
	return b.Bytes()
}

// renderConfigs shows generated configs as Istio YAML.
func renderConfigs(t *testing.T, cfgs []config.Config) []any {
	out := []any{}
	for _, c := range cfgs {
		js, err := protojson.Marshal(c.Spec)
		if err != nil {
			t.Fatal(err)
		}
		meta := map[string]any{"namespace": c.Namespace, "name": c.Name}
		if len(c.Annotations) > 0 {
			meta["annotations"] = c.Annotations
		}
		out = append(out, map[string]any{"kind": c.Kind.String(), "metadata": meta, "spec": json.RawMessage(js)})
	}
	return out
}

func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, produce)
}
