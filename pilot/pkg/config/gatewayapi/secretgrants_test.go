package gatewayapi_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// The Secrets a conversion lends a generated Gateway are exactly those its
// listener references with a ReferenceGrant: an unnamed grant allowing
// every Secret of a namespace hands out only the one referenced, to that
// Gateway only; without the grant, none. The generated Gateway is known
// by its key and source (an Istio Gateway of the same name is not), and
// names the ServiceAccount of the proxies Wayfinder deploys for it.
func TestSecretGrantsOnlyReferencedAndGranted(t *testing.T) {
	const base = `# proxy: edge-ns/edge
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: wayfinder}
spec: {controllerName: wayfinder.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: edge-ns}
spec:
  gatewayClassName: wayfinder
  listeners:
  - name: https
    port: 443
    protocol: HTTPS
    tls: {certificateRefs: [{name: used, namespace: certs}]}
`
	const grant = `---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: all-secrets, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: edge-ns}]
  to: [{group: "", kind: Secret}]
`
	granted := gatewayapi.ConvertWithStatus(everySecretServes(t, decode(t, []byte(base+grant)).kube), gatewayapi.Options{}, goldenNow).SecretGrants
	generated := config.Key{Kind: schema.Gateway, Namespace: "edge-ns", Name: gatewayapi.IstioGatewayName("edge", "https")}
	other := config.Key{Kind: schema.Gateway, Namespace: "edge-ns", Name: "other"}
	cases := []struct {
		gw   config.Key
		ref  model.SecretRef
		want bool
	}{
		{generated, model.SecretRef{Namespace: "certs", Name: "used"}, true},
		{generated, model.SecretRef{Namespace: "certs", Name: "unused"}, false},
		{other, model.SecretRef{Namespace: "certs", Name: "used"}, false},
		{config.Key{Kind: schema.Gateway, Namespace: "tenant", Name: generated.Name}, model.SecretRef{Namespace: "certs", Name: "used"}, false},
	}
	for _, c := range cases {
		if got := granted.GatewayMayUse(c.gw, c.ref); got != c.want {
			t.Errorf("with the grant, %s may use %s: %v, want %v", c.gw, c.ref, got, c.want)
		}
	}
	if sa, ok := granted.GeneratedGateway(generated, "Gateway edge-ns/edge"); !ok || sa != "" {
		t.Errorf("not deploying: generated %v, ServiceAccount %q, want true and none", ok, sa)
	}
	if _, ok := granted.GeneratedGateway(generated, "kube://edge-ns/"+generated.Name); ok {
		t.Error("an Istio Gateway named like the generated one passes for it")
	}
	deployed := gatewayapi.ConvertWithStatus(everySecretServes(t, decode(t, []byte(base+grant)).kube), gatewayapi.Options{DeploysProxies: true}, goldenNow).SecretGrants
	if sa, ok := deployed.GeneratedGateway(generated, "Gateway edge-ns/edge"); !ok || sa != "edge-wayfinder" {
		t.Errorf("deploying: generated %v, ServiceAccount %q, want the deployer's edge-wayfinder", ok, sa)
	}
	if granted.Len() != 1 {
		t.Errorf("%d pairs allowed, want 1", granted.Len())
	}
	res := gatewayapi.ConvertWithStatus(everySecretServes(t, decode(t, []byte(base)).kube), gatewayapi.Options{}, goldenNow)
	if res.SecretGrants.GatewayMayUse(generated, model.SecretRef{Namespace: "certs", Name: "used"}) || res.SecretGrants.Len() != 0 {
		t.Error("without a grant the referenced Secret is allowed")
	}
	if len(res.Configs) != 0 {
		t.Errorf("without a grant the listener is served: %v", res.Configs)
	}
}

// Only the proxies Wayfinder deploys are bound to a ServiceAccount it
// knows: not with the deployer off, nor for a Gateway opted out or
// addressed by a Hostname (deployed by hand).
func TestDeployedServiceAccount(t *testing.T) {
	g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "ns"}, Spec: gw.GatewaySpec{GatewayClassName: "wayfinder"}}
	if sa := gatewayapi.DeployedServiceAccount(g, true); sa != "edge-wayfinder" {
		t.Errorf("deployed: %q, want edge-wayfinder", sa)
	}
	if sa := gatewayapi.DeployedServiceAccount(g, false); sa != "" {
		t.Errorf("deployer off: %q", sa)
	}
	optedOut := g.DeepCopy()
	optedOut.Annotations = map[string]string{gatewayapi.ManagedAnnotation: "false"}
	if sa := gatewayapi.DeployedServiceAccount(optedOut, true); sa != "" {
		t.Errorf("opted out: %q", sa)
	}
	byHostname := g.DeepCopy()
	byHostname.Spec.Addresses = []gw.GatewaySpecAddress{{Type: ptrTo(gw.HostnameAddressType), Value: "mine.ns.svc"}}
	if sa := gatewayapi.DeployedServiceAccount(byHostname, true); sa != "" {
		t.Errorf("addressed by a Hostname: %q", sa)
	}
}
