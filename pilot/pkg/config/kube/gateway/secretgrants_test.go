package gateway_test

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gateway"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// The Secrets a conversion lets a namespace's Gateways use are exactly
// those one of its Gateways references with a ReferenceGrant: an unnamed
// grant allowing every Secret of a namespace hands out only the one
// referenced, to the Gateway's namespace only; without the grant, none.
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
	granted := gateway.ConvertWithStatus(decode(t, []byte(base+grant)).kube, gateway.Options{}, goldenNow).SecretGrants
	cases := []struct {
		ns   string
		ref  model.SecretRef
		want bool
	}{
		{"edge-ns", model.SecretRef{Namespace: "certs", Name: "used"}, true},
		{"edge-ns", model.SecretRef{Namespace: "certs", Name: "unused"}, false},
		{"tenant", model.SecretRef{Namespace: "certs", Name: "used"}, false},
	}
	for _, c := range cases {
		if got := granted.GatewayMayUse(c.ns, c.ref); got != c.want {
			t.Errorf("with the grant, Gateways of %s may use %s: %v, want %v", c.ns, c.ref, got, c.want)
		}
	}
	if granted.Len() != 1 {
		t.Errorf("%d pairs allowed, want 1", granted.Len())
	}
	res := gateway.ConvertWithStatus(decode(t, []byte(base)).kube, gateway.Options{}, goldenNow)
	if res.SecretGrants.GatewayMayUse("edge-ns", model.SecretRef{Namespace: "certs", Name: "used"}) || res.SecretGrants.Len() != 0 {
		t.Error("without a grant the referenced Secret is allowed")
	}
	if len(res.Configs) != 0 {
		t.Errorf("without a grant the listener is served: %v", res.Configs)
	}
}
