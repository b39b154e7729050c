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
// "# granted-secrets: NS/NAME,..." lists the Secrets its ServiceAccount
// may get (as a RoleBinding would grant); it may list the Secrets of its
// own namespace (the gateway's Role) unless "# list-secrets: denied".
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
	v, _ := header(data, "list-secrets")
	return model.SecretScope{Identity: id, Authorizer: grantList{granted: granted, noList: v == "denied"}}
}

// grantList is a SecretAuthorizer allowing the listed "NS/NAME" Secrets,
// and listing the Secrets of the proxy's own namespace (the gateway's
// Role) unless noList ("# list-secrets: denied").
type grantList struct {
	granted []string
	noList  bool
}

func (g grantList) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	if slices.Contains(g.granted, ref.String()) {
		return true, ""
	}
	return false, "no RBAC rule allows it (test)"
}

func (g grantList) CanListSecrets(id model.Identity, namespace string) (bool, string) {
	if !g.noList && namespace == id.Namespace {
		return true, ""
	}
	return false, "no RBAC rule allows list (test)"
}
