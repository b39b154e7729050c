package gatewayapi_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	gw "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

// conformanceDir holds manifests of the Gateway API project's own
// conformance suite, copied unchanged (see its README), with the routes
// Wayfinder translates them to.
const conformanceDir = "testdata/conformance"

// conformanceKinds are the documents of the suite's manifests conversion
// reads; Deployments, ConfigMaps and the like are left out.
var conformanceKinds = map[string]bool{
	"GatewayClass": true, "Gateway": true, "HTTPRoute": true, "GRPCRoute": true, "TLSRoute": true, "TCPRoute": true,
	"ReferenceGrant": true, "Service": true, "Namespace": true, "Secret": true,
}

// conformanceInput is a case's manifest on top of the suite's base
// manifests (conformance/base/manifests.yaml): Gateways same-namespace,
// all-namespaces and backend-namespaces and the backend Services, with
// the suite's {GATEWAY_CLASS_NAME} placeholder set to a GatewayClass of
// Wayfinder's controller.
func conformanceInput(t *testing.T, data []byte) []byte {
	t.Helper()
	base, err := os.ReadFile(conformanceDir + "/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The Secrets the suite creates at run time, against which the
	// listeners' certificateRefs resolve.
	suiteSecrets, err := os.ReadFile(conformanceDir + "/suite-secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: wayfinder}\nspec: {controllerName: " + gatewayapi.ControllerName + "}\n"}
	for _, src := range [][]byte{base, suiteSecrets, data} {
		for _, doc := range documentSeparator.Split(string(src), -1) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatal(err)
			}
			if conformanceKinds[head.Kind] {
				docs = append(docs, strings.ReplaceAll(doc, "{GATEWAY_CLASS_NAME}", "wayfinder"))
			}
		}
	}
	return []byte(strings.Join(docs, "\n---\n"))
}

// parentGateways are the Gateways the case's routes name, "ns/name",
// sorted: the proxies whose translation the golden shows.
func parentGateways(in gatewayapi.Input, caseObjects map[string]bool) []string {
	var out []string
	add := func(kind, ns string, refs []gw.ParentReference) {
		for _, r := range refs {
			if r.Kind != nil && *r.Kind != "Gateway" {
				continue
			}
			pns := ns
			if r.Namespace != nil {
				pns = string(*r.Namespace)
			}
			out = append(out, pns+"/"+string(r.Name))
		}
	}
	for _, r := range in.HTTPRoutes {
		if caseObjects["HTTPRoute "+r.Namespace+"/"+r.Name] {
			add("HTTPRoute", r.Namespace, r.Spec.ParentRefs)
		}
	}
	for _, r := range in.GRPCRoutes {
		if caseObjects["GRPCRoute "+r.Namespace+"/"+r.Name] {
			add("GRPCRoute", r.Namespace, r.Spec.ParentRefs)
		}
	}
	for _, r := range in.TLSRoutes {
		if caseObjects["TLSRoute "+r.Namespace+"/"+r.Name] {
			add("TLSRoute", r.Namespace, r.Spec.ParentRefs)
		}
	}
	for _, r := range in.TCPRoutes {
		if caseObjects["TCPRoute "+r.Namespace+"/"+r.Name] {
			add("TCPRoute", r.Namespace, r.Spec.ParentRefs)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// produceConformance converts a conformance case with the base manifests,
// validates every generated config (as the store would) and every route
// and listener (ValidateAll), and translates for a proxy of each Gateway
// the case's routes name.
func produceConformance(t *testing.T, file string, data []byte) []byte {
	in := decode(t, conformanceInput(t, data))
	caseObjects := map[string]bool{}
	for _, r := range in.kube.HTTPRoutes {
		caseObjects["HTTPRoute "+r.Namespace+"/"+r.Name] = true
	}
	for _, r := range in.kube.GRPCRoutes {
		caseObjects["GRPCRoute "+r.Namespace+"/"+r.Name] = true
	}
	for _, r := range in.kube.TLSRoutes {
		caseObjects["TLSRoute "+r.Namespace+"/"+r.Name] = true
	}
	for _, r := range in.kube.TCPRoutes {
		caseObjects["TCPRoute "+r.Namespace+"/"+r.Name] = true
	}
	conv := gatewayapi.ConvertWithStatus(in.kube, gatewayapi.Options{}, goldenNow)
	for _, c := range conv.Configs {
		if err := validation.Validate(c); err != nil {
			t.Errorf("generated %s fails validation: %v", c.Key(), err)
		}
	}
	push := model.NewPushContext(memory.New(conv.Configs), in)
	secrets := model.SecretStoreFunc(func(ns, name string) ([]byte, []byte, bool) {
		return model.TLSKeyPair(in.secrets[ns+"/"+name])
	})
	var b bytes.Buffer
	golden.WriteYAML(t, &b, "configs", renderConfigs(t, conv.Configs))
	stream := len(in.kube.TLSRoutes)+len(in.kube.TCPRoutes) > 0
	errs := slices.Clone(conv.Errors)
	errs = append(errs, push.Errors...)
	for _, g := range parentGateways(in.kube, caseObjects) {
		ns, name, _ := strings.Cut(g, "/")
		p := &model.Proxy{Type: model.Router, Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: name}}
		scope := model.SecretScope{Identity: &model.Identity{Namespace: ns, ServiceAccount: "gateway", Method: model.MethodToken}}
		res := core.BuildGatewayWithSecrets(push, push.GatewaysForProxy(p), secrets, scope)
		for _, r := range res.Routes {
			if err := r.ValidateAll(); err != nil {
				t.Errorf("%s: route %s fails validation: %v", g, r.Name, err)
			}
		}
		for _, l := range res.Listeners {
			if err := l.ValidateAll(); err != nil {
				t.Errorf("%s: listener %s fails validation: %v", g, l.Name, err)
			}
		}
		if stream {
			golden.Section(t, &b, "listeners of "+g, res.Listeners)
		}
		golden.Section(t, &b, "routes of "+g, res.Routes)
		errs = append(errs, res.Errors...)
	}
	msgs := []string{}
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	golden.WriteYAML(t, &b, "errors", msgs)
	golden.WriteYAML(t, &b, "status", renderStatus(conv.Status))
	return b.Bytes()
}

// TestGoldenConformance translates manifests of the Gateway API
// conformance suite (make golden regenerates them).
func TestGoldenConformance(t *testing.T) {
	golden.Run(t, conformanceDir, *update, produceConformance)
}
