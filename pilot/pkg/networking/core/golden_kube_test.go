package core

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// kubeObjects are the Kubernetes documents of a golden input: what a
// Kubernetes-mode control plane reads from informers beside Istio config.
type kubeObjects struct {
	ingresses []*networkingv1.Ingress
	classes   []*networkingv1.IngressClass
	services  map[string]*corev1.Service // "namespace/name"
	secrets   map[string]map[string][]byte
}

// documentSeparator splits documents exactly as manifest.Parse does, so
// document numbers in messages stay those of the file.
var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// splitKube takes the Ingress, IngressClass, Service and Secret documents
// out of data, leaving a comment in their place so the other documents
// keep their numbers. Inputs without such documents are returned as is.
func splitKube(t *testing.T, data []byte) ([]byte, kubeObjects) {
	objs := kubeObjects{services: map[string]*corev1.Service{}, secrets: map[string]map[string][]byte{}}
	docs := documentSeparator.Split(string(data), -1)
	found := false
	for i, doc := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			continue // manifest.Parse reports it
		}
		var into any
		switch head.APIVersion + " " + head.Kind {
		case "networking.k8s.io/v1 Ingress":
			ing := &networkingv1.Ingress{}
			objs.ingresses, into = append(objs.ingresses, ing), ing
		case "networking.k8s.io/v1 IngressClass":
			c := &networkingv1.IngressClass{}
			objs.classes, into = append(objs.classes, c), c
		case "v1 Service":
			into = &corev1.Service{}
		case "v1 Secret":
			into = &corev1.Secret{}
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		switch o := into.(type) {
		case *corev1.Service:
			objs.services[o.Namespace+"/"+o.Name] = o
		case *corev1.Secret:
			data := maps.Clone(o.Data)
			if data == nil {
				data = map[string][]byte{}
			}
			for k, v := range o.StringData {
				data[k] = []byte(v)
			}
			objs.secrets[o.Namespace+"/"+o.Name] = data
		}
		docs[i] = "\n# " + head.Kind + " (read by the harness)\n"
		found = true
	}
	if !found {
		return data, objs
	}
	return []byte(strings.Join(docs, "---")), objs
}

// convert translates the Ingresses as Kubernetes mode does.
func (k kubeObjects) convert() ([]config.Config, []*config.Error) {
	if len(k.ingresses) == 0 {
		return nil, nil
	}
	return ingress.Convert(k.ingresses, k.classes, ingress.Options{
		IngressClass: "wayfinder",
		Services:     func(ns, name string) *corev1.Service { return k.services[ns+"/"+name] },
	})
}

// Secret serves the Secret documents.
func (k kubeObjects) Secret(namespace, name string) (cert, key []byte, ok bool) {
	return model.TLSKeyPair(k.secrets[namespace+"/"+name])
}

// SecretData serves the Secret documents' data (CA bundles and CRLs).
func (k kubeObjects) SecretData(namespace, name string) (map[string][]byte, bool) {
	d, ok := k.secrets[namespace+"/"+name]
	return d, ok
}

// Services turns Service documents into registry services: ports with the
// protocol their name announces (Istio's convention), no endpoints.
func (k kubeObjects) Services() []*model.Service {
	var out []*model.Service
	for _, key := range slices.Sorted(maps.Keys(k.services)) {
		s := k.services[key]
		svc := &model.Service{Hostname: s.Name + "." + s.Namespace + ".svc.cluster.local", Namespace: s.Namespace,
			Source: config.Key{Namespace: s.Namespace, Name: s.Name}, CreationTimestamp: s.CreationTimestamp.Time,
			ExportTo: model.ParseExportToAnnotation(s.Annotations[model.ExportToAnnotation])}
		for _, p := range s.Spec.Ports {
			proto, _, _ := strings.Cut(strings.ToUpper(p.Name), "-")
			if !model.IsHTTPProtocol(proto) {
				proto = "TCP"
			}
			svc.Ports = append(svc.Ports, model.Port{Name: p.Name, Number: uint32(p.Port), Protocol: proto, TargetPort: uint32(p.TargetPort.IntVal)})
		}
		out = append(out, svc)
	}
	return out
}

// registries is the Service registry of the input, if it has Services.
func (k kubeObjects) registries() []model.ServiceDiscovery {
	if len(k.services) == 0 {
		return nil
	}
	return []model.ServiceDiscovery{k}
}

// secretRefs are the SDS secret names the listeners reference.
func secretRefs(t *testing.T, tr translation) []string {
	var out []string
	for _, l := range tr.gateway.Listeners {
		for _, fc := range l.GetFilterChains() {
			common := tlsContext(t, fc.GetTransportSocket()).GetCommonTlsContext()
			for _, sds := range common.GetTlsCertificateSdsSecretConfigs() {
				out = append(out, sds.GetName())
			}
			if ca := common.GetCombinedValidationContext().GetValidationContextSdsSecretConfig(); ca != nil {
				out = append(out, ca.GetName())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tlsContext unpacks a filter chain's TLS context; nil for plain text.
func tlsContext(t *testing.T, ts *corev3.TransportSocket) *tlsv3.DownstreamTlsContext {
	if ts == nil {
		return nil
	}
	ctx := &tlsv3.DownstreamTlsContext{}
	if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatalf("transport socket %s: %v", ts.GetName(), err)
	}
	return ctx
}
