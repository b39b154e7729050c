package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecurityFile holds the scenario's RequestAuthentications and
// AuthorizationPolicies, which never change during a run: like the
// ServiceEntries, they share one file.
const SecurityFile = "security.yaml"

// BenchJWKS is the public RSA key set every RequestAuthentication carries
// inline, so that no rule needs a jwksUri fetched over the network. It is
// istio's own sample key (security/tools/jwt/samples/jwks.json in
// istio/istio), the public half only.
const BenchJWKS = `{"keys":[{"e":"AQAB","kid":"DHFbpoIUqrY8t2zpA2qXfCmr5VO5ZEr4RzHU_-envvQ","kty":"RSA",` +
	`"n":"xAE7eB6qugXyCAG3yhh7pkDkT65pHymX-P7KfIupjf59vsdo91bSP9C8H07pSAGQO1MV_xFj9VswgsCg4R6otmg5PV2He95lZdHtOcU5DXIg_pbhLdKXbi66GlVeK6ABZOUW3WYtnNHD-91gVuoeJT_DwtGGcp4ignkgXfkiEm4sw-4sfb4qdt5oLbyVpmW6x9cfa7vs2WTfURiCrBoUqgBo_-4WTiULmmHSGZHOjzwa8WtrtOQGsAFjIbno85jp6MnGGGZPYZbDAa_b3y5u-YpW7ypZrvD8BgtKVjgtQgZhLAGezMt0ua3DRrWnKqTZ0BJ_EyxOGuHJrLsn00fnMQ"}]}`

// Issuer is the JWT issuer of RequestAuthentication i.
func Issuer(i int) string { return fmt.Sprintf("https://issuer-%d.example.com", i) }

// The actions of AuthorizationPolicy i, by i modulo 10: seven ALLOW, two
// DENY, one AUDIT, roughly the mix of a gateway where most teams allow
// their callers and a few block ranges or audit admin paths. No CUSTOM:
// it needs an ext_authz provider in the mesh config.
func policyAction(i int) string {
	switch i % 10 {
	case 7, 8:
		return "DENY"
	case 9:
		return "AUDIT"
	default:
		return "ALLOW"
	}
}

// writeSecurity writes SecurityFile when o asks for any policy, and
// removes an earlier one when it does not, so that the folder holds the
// scenario o describes.
func writeSecurity(dir string, o Options) error {
	if o.AuthorizationPolicies == 0 && o.RequestAuthentications == 0 {
		if err := os.Remove(filepath.Join(dir, SecurityFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("workload: %w", err)
		}
		return nil
	}
	var b bytes.Buffer
	for i := range o.RequestAuthentications {
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		b.Write(RequestAuthentication(i))
	}
	for i := range o.AuthorizationPolicies {
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		b.Write(AuthorizationPolicy(i, o.Services, o.RequestAuthentications))
	}
	return writeFile(dir, SecurityFile, b.Bytes())
}

// RequestAuthentication is RequestAuthentication jwt-i in istio-system,
// selecting the ingress gateway: one JWT rule of issuer Issuer(i) with
// BenchJWKS inline, an audience, the token also taken from a header and
// its payload passed upstream.
func RequestAuthentication(i int) []byte {
	return fmt.Appendf(nil, `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata:
  name: jwt-%d
  namespace: istio-system
spec:
  selector:
    matchLabels:
      istio: ingressgateway
  jwtRules:
  - issuer: %s
    audiences:
    - api.example.com
    jwks: '%s'
    fromHeaders:
    - name: x-jwt-%d
    outputPayloadToHeader: x-jwt-payload
`, i, Issuer(i), BenchJWKS, i)
}

// AuthorizationPolicy is AuthorizationPolicy authz-i in istio-system,
// selecting the ingress gateway, for host app-(i mod n) of an n-service
// scenario with ras RequestAuthentications (see policyAction for the
// action):
//
//   - ALLOW: callers with a token of issuer (i mod ras) (any caller with
//     a tenant header when ras is 0) to GET and POST /api/* and / on the
//     host, every fifth also requiring a header x-tenant;
//   - DENY: a /24 of 10.0.0.0/8 per policy by remoteIpBlocks (the
//     client's address), on every path of the host but /healthz;
//   - AUDIT: /admin/* on the host.
func AuthorizationPolicy(i, n, ras int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: authz-%d
  namespace: istio-system
spec:
  selector:
    matchLabels:
      istio: ingressgateway
  action: %s
  rules:
  - `, i, policyAction(i))
	host := AppHost(i % max(n, 1))
	switch policyAction(i) {
	case "ALLOW":
		if ras > 0 {
			fmt.Fprintf(&b, `from:
    - source:
        requestPrincipals:
        - %s/*
    to:`, Issuer(i%ras))
		} else {
			b.WriteString("to:")
		}
		fmt.Fprintf(&b, `
    - operation:
        hosts:
        - %s
        methods:
        - GET
        - POST
        paths:
        - /api/*
        - /
`, host)
		if i%5 == 0 || ras == 0 {
			fmt.Fprintf(&b, `    when:
    - key: "request.headers[x-tenant]"
      values:
      - tenant-%d
`, i)
		}
	case "DENY":
		fmt.Fprintf(&b, `from:
    - source:
        remoteIpBlocks:
        - 10.%d.%d.0/24
    to:
    - operation:
        hosts:
        - %s
        notPaths:
        - /healthz
`, (i>>8)&255, i&255, host)
	case "AUDIT":
		fmt.Fprintf(&b, `to:
    - operation:
        hosts:
        - %s
        paths:
        - /admin/*
`, host)
	}
	return b.Bytes()
}

// validateSecurity checks the policy counts of o.
func (o Options) validateSecurity() error {
	var bad []string
	if o.AuthorizationPolicies < 0 || o.AuthorizationPolicies > 1<<16 {
		bad = append(bad, fmt.Sprintf("AuthorizationPolicies %d", o.AuthorizationPolicies))
	}
	if o.RequestAuthentications < 0 || o.RequestAuthentications > 1<<16 {
		bad = append(bad, fmt.Sprintf("RequestAuthentications %d", o.RequestAuthentications))
	}
	if len(bad) > 0 {
		return fmt.Errorf("workload: %s out of range (0 to 65536)", strings.Join(bad, ", "))
	}
	return nil
}
