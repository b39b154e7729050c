package security

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// saUserPrefix starts the user name the API server gives a ServiceAccount
// token: system:serviceaccount:NAMESPACE:NAME.
const saUserPrefix = "system:serviceaccount:"

// serviceAccountIdentity turns a TokenReview's user name into an Identity;
// any other kind of user (a person, a node) is refused.
func serviceAccountIdentity(username string) (*model.Identity, error) {
	rest, ok := strings.CutPrefix(username, saUserPrefix)
	if !ok {
		return nil, fmt.Errorf("user %q is not a ServiceAccount", truncate(username))
	}
	ns, sa, ok := strings.Cut(rest, ":")
	if !ok || ns == "" || sa == "" || strings.Contains(sa, ":") {
		return nil, fmt.Errorf("user %q is not a ServiceAccount", truncate(username))
	}
	return &model.Identity{Namespace: ns, ServiceAccount: sa, Method: model.MethodToken}, nil
}

// spiffeIdentity reads spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/NAME, Istio's
// workload identity in a certificate's URI SAN.
func spiffeIdentity(u *url.URL) (*model.Identity, error) {
	if u.Scheme != "spiffe" || u.Host == "" {
		return nil, fmt.Errorf("URI SAN %q is not spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/NAME", truncate(u.String()))
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) != 4 || parts[0] != "ns" || parts[2] != "sa" || parts[1] == "" || parts[3] == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("URI SAN %q is not spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/NAME", truncate(u.String()))
	}
	return &model.Identity{Namespace: parts[1], ServiceAccount: parts[3], TrustDomain: u.Host, Method: model.MethodCertificate}, nil
}

// truncate bounds client-supplied text in errors and logs.
func truncate(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return s[:max] + "...(truncated)"
}
