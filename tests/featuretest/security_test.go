package featuretest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// servedKeys is the key set the JWKS server on 127.0.0.1 serves.
const servedKeys = `{"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","e":"AQAB","n":"xAE7eB6qugXyCAG3yhh7pkDkT65pHymX-P7KfIupjf59vsdo91bSP9C8H07pSAGQO1MV_xFj9VswgsCg4R6otmg5PV2He95lZdHtOcU5DXIg_pbhLdKXbi66GlVeK6ABZOUW3WYtnNHD-91gVuoeJT_DwtGGcp4ignkgXfkiEm4sw-4sfb4qdt5oLbyVpmW6x9cfa7vs2WTfURiCrBoUqgBo_-4WTiULmmHSGZHOjzwa8WtrtOQGsAFjIbno85jp6MnGGGZPYZbDAa_b3y5u-YpW7ypZrvD8BgtKVjgtQgZhLAGezMt0ua3DRrWnKqTZ0BJ_EyxOGuHJrLsn00fnMQ"}]}`

func securityYAML(jwksURI string) string {
	return fmt.Sprintf(`
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  jwtRules:
  - issuer: https://issuer.example
    jwksUri: %s
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: require-jwt, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: ALLOW
  rules:
  - from: [{source: {requestPrincipals: ["https://issuer.example/*"]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: block-office, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: DENY
  rules:
  - from: [{source: {remoteIpBlocks: ["203.0.113.0/24"]}}]
`, jwksURI)
}

// httpFilters is the connection manager of listener 0.0.0.0_80.
func gatewayHCM(s adsc.State) *hcmv3.HttpConnectionManager {
	for _, fc := range s.Listeners["0.0.0.0_80"].GetFilterChains() {
		for _, f := range fc.GetFilters() {
			cm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(cm) == nil {
				return cm
			}
		}
	}
	return nil
}

func filterNames(cm *hcmv3.HttpConnectionManager) []string {
	var out []string
	for _, f := range cm.GetHttpFilters() {
		out = append(out, f.GetName())
	}
	return out
}

// inlineJWKS is the key set the jwt_authn filter inlines for its first
// provider, or "".
func inlineJWKS(cm *hcmv3.HttpConnectionManager) string {
	for _, f := range cm.GetHttpFilters() {
		jw := &jwtv3.JwtAuthentication{}
		if f.GetTypedConfig().UnmarshalTo(jw) != nil {
			continue
		}
		for _, p := range jw.GetProviders() {
			return p.GetLocalJwks().GetInlineString()
		}
	}
	return ""
}

// RequestAuthentication and AuthorizationPolicy in file mode reach the
// gateway as istiod places them (jwt_authn, then the DENY and ALLOW RBAC
// filters, before fault, CORS and the router); the jwksUri is fetched
// from a real server on 127.0.0.1 in the background (fail-closed until
// it arrives, then pushed inlined); both policies count the gateway in
// their status, /debug/adsz lists them; a CUSTOM policy naming a
// provider the mesh config lacks is reported against its field and
// denies what it matches.
func TestSecurityPoliciesReachGateway(t *testing.T) {
	var hits atomic.Int64
	jwksSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, servedKeys)
	}))
	t.Cleanup(jwksSrv.Close)

	files := baseFiles()
	files["security.yaml"] = securityYAML(jwksSrv.URL + "/jwks.json")
	e := newEnv(t, files)
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "the fetched key set inlined", func(s adsc.State) bool {
		return allACKed(s) && inlineJWKS(gatewayHCM(s)) == servedKeys
	})
	names := filterNames(gatewayHCM(s))
	want := []string{"envoy.filters.http.jwt_authn", "envoy.filters.http.rbac", "envoy.filters.http.rbac",
		"envoy.filters.http.fault", "envoy.filters.http.cors", "envoy.filters.http.router"}
	if !slices.Equal(names, want) {
		t.Errorf("HTTP filters %v, want %v", names, want)
	}
	var actions []*rbacv3.RBAC
	for _, f := range gatewayHCM(s).GetHttpFilters() {
		r := &rbacv3.RBAC{}
		if f.GetName() == "envoy.filters.http.rbac" && f.GetTypedConfig().UnmarshalTo(r) == nil {
			actions = append(actions, r)
		}
	}
	if len(actions) != 2 || actions[0].GetRules().GetAction().String() != "DENY" || actions[1].GetRules().GetAction().String() != "ALLOW" {
		t.Errorf("RBAC filters: %d, want DENY then ALLOW", len(actions))
	}
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Error("routes lost beside the policies")
	}

	status := func(name string) (debugapi.ConfigzStatus, bool) {
		cz := e.configz()
		i := slices.IndexFunc(cz.Status, func(st debugapi.ConfigzStatus) bool { return st.Name == name && st.Namespace == "istio-system" })
		if i < 0 {
			return debugapi.ConfigzStatus{}, false
		}
		return cz.Status[i], true
	}
	for _, name := range []string{"jwt", "require-jwt", "block-office"} {
		poll.Until(t, name+" attributed to the ACKing gateway", func() bool {
			st, ok := status(name)
			return ok && st.Gateways == 1 && st.Acked == 1
		})
	}
	code, body := e.get("/debug/adsz")
	if code != http.StatusOK || !strings.Contains(body, "AuthorizationPolicy istio-system/require-jwt") ||
		!strings.Contains(body, "RequestAuthentication istio-system/jwt") {
		t.Errorf("/debug/adsz does not list the policies: %d %s", code, body)
	}

	// CUSTOM with a provider the mesh config does not define: denied.
	e.write("custom.yaml", `
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: CUSTOM
  provider: {name: opa}
  rules:
  - to: [{operation: {paths: ["/admin*"]}}]
`)
	s = waitFor(t, c, "the CUSTOM policy's filter", func(s adsc.State) bool {
		return allACKed(s) && len(filterNames(gatewayHCM(s))) == 7
	})
	first := &rbacv3.RBAC{}
	if f := gatewayHCM(s).GetHttpFilters()[0]; f.GetName() != "envoy.filters.http.rbac" || f.GetTypedConfig().UnmarshalTo(first) != nil ||
		first.GetRules().GetAction().String() != "DENY" || len(first.GetRules().GetPolicies()) == 0 {
		t.Errorf("first filter %s: want a DENY RBAC for the CUSTOM policy whose provider is missing (%v)", f.GetName(), first)
	}
	poll.Until(t, "the CUSTOM policy's problem named with its field", func() bool {
		st, ok := status("ext")
		return ok && slices.ContainsFunc(st.Errors, func(e debugapi.ConfigzError) bool {
			return strings.HasPrefix(e.Field, "spec.provider") && !e.Warning
		})
	})
	if hits.Load() == 0 {
		t.Error("the JWKS server was never asked")
	}
}

// A team protects its own route (beyond istiod): an AuthorizationPolicy
// and a RequestAuthentication in the route's namespace, targeting its
// VirtualService, put per-route config on that route only, through
// filters of their own on the shared gateway; the other gateway's routes
// and the gateway-level filters are unchanged.
func TestRouteLevelPolicies(t *testing.T) {
	files := baseFiles()
	files["route-policy.yaml"] = `
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: bookinfo-only-get, namespace: default}
spec:
  targetRefs: [{group: networking.istio.io, kind: VirtualService, name: bookinfo}]
  action: ALLOW
  rules:
  - to: [{operation: {methods: [GET]}}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: bookinfo-jwt, namespace: default}
spec:
  targetRefs: [{group: networking.istio.io, kind: VirtualService, name: bookinfo}]
  jwtRules:
  - issuer: https://team.example
    jwks: '` + servedKeys + `'
`
	e := newEnv(t, files)
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "the route-level filters", func(s adsc.State) bool {
		return allACKed(s) && slices.Contains(filterNames(gatewayHCM(s)), "wayfinder.filters.http.rbac.route.allow")
	})
	rc := s.Routes["http.80"]
	var perRoute map[string]bool
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if strings.HasPrefix(r.GetStatPrefix(), "vs/default/bookinfo/") {
				perRoute = map[string]bool{}
				for name := range r.GetTypedPerFilterConfig() {
					perRoute[name] = true
				}
			}
		}
	}
	if !perRoute["wayfinder.filters.http.rbac.route.allow"] || !perRoute["envoy.filters.http.jwt_authn"] {
		t.Errorf("bookinfo's route per-filter configs %v: want the route ALLOW RBAC and the JWT requirement", perRoute)
	}
	for _, name := range filterNames(gatewayHCM(s)) {
		if name == "envoy.filters.http.rbac" {
			t.Errorf("a gateway-level RBAC filter from a route-level policy: %v", filterNames(gatewayHCM(s)))
		}
	}
	poll.Until(t, "the route-level policy attributed to the gateway", func() bool {
		cz := e.configz()
		i := slices.IndexFunc(cz.Status, func(st debugapi.ConfigzStatus) bool { return st.Name == "bookinfo-only-get" })
		return i >= 0 && cz.Status[i].Gateways == 1 && cz.Status[i].Acked == 1
	})
}
