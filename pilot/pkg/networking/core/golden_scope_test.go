package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// header returns the value of "# key: value" among the input's leading
// comment lines.
func header(data []byte, key string) (string, bool) {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			break
		}
		if v, ok := strings.CutPrefix(line, "# "+key+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// secretScope is whom the golden proxy's secrets are for: by default a
// gateway authenticated as istio-system/istio-ingressgateway-service-account;
// "# proxy-identity: NS/SA" says another, "none" a plaintext proxy.
// "# granted-secrets: NS/NAME,..." lists the Secrets of other namespaces
// its ServiceAccount may get (as a RoleBinding would grant).
func secretScope(t *testing.T, data []byte) model.SecretScope {
	id := &model.Identity{Namespace: "istio-system", ServiceAccount: "istio-ingressgateway-service-account", Method: model.MethodToken}
	if v, ok := header(data, "proxy-identity"); ok {
		ns, sa, found := strings.Cut(v, "/")
		switch {
		case v == "none":
			id = nil
		case !found:
			t.Fatalf("proxy-identity: %q is not NS/SA or none", v)
		default:
			id = &model.Identity{Namespace: ns, ServiceAccount: sa, Method: model.MethodToken}
		}
	}
	var granted []string
	if v, ok := header(data, "granted-secrets"); ok {
		for _, g := range strings.Split(v, ",") {
			granted = append(granted, strings.TrimSpace(g))
		}
	}
	return model.SecretScope{Identity: id, Authorizer: grantList(granted)}
}

// grantList is a SecretAuthorizer allowing the listed "NS/NAME" Secrets.
type grantList []string

func (g grantList) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	if slices.Contains(g, ref.String()) {
		return true, ""
	}
	return false, "no RBAC rule allows it (test)"
}
