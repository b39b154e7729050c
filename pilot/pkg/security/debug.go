package security

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// Viewer is who asks a debug endpoint. A nil *Viewer (file mode: debug
// served on loopback without authentication) sees everything.
type Viewer struct {
	Identity *model.Identity
	// Admin viewers (ServiceAccounts of an admin namespace, or named
	// admins) see every proxy and every endpoint.
	Admin bool
}

// SeesAll reports whether v may see every proxy and endpoint.
func (v *Viewer) SeesAll() bool { return v == nil || v.Admin }

// SeesNamespace reports whether v may see proxies of namespace ns.
func (v *Viewer) SeesNamespace(ns string) bool {
	return v.SeesAll() || (v.Identity != nil && v.Identity.Namespace == ns)
}

type viewerKey struct{}

// WithViewer returns ctx carrying v.
func WithViewer(ctx context.Context, v *Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// ViewerFrom is the viewer ctx carries; nil (sees everything) when the
// debug endpoints are not authenticated.
func ViewerFrom(ctx context.Context) *Viewer {
	v, _ := ctx.Value(viewerKey{}).(*Viewer)
	return v
}

// DebugAuth authenticates debug requests by bearer token (TokenReview).
// Tokens are checked without audiences, that is for the API server's own
// audience: the token `kubectl create token SA` prints by default.
type DebugAuth struct {
	Tokens *TokenAuthenticator
	// AdminNamespaces are the namespaces whose ServiceAccounts see
	// everything.
	AdminNamespaces []string
	// AdminServiceAccounts are further ServiceAccounts ("NAMESPACE/NAME")
	// that see everything.
	AdminServiceAccounts []string
	// Admission bounds the TokenReviews new tokens may start; nil: none.
	Admission *Admission
}

// DebugAuthError is a refused debug request: Code is 401, 429 or 503;
// RetryAfter, when set, is sent as Retry-After.
type DebugAuthError struct {
	Code       int
	Msg        string
	RetryAfter time.Duration
}

func (e *DebugAuthError) Error() string { return e.Msg }

// Viewer authenticates r.
func (d *DebugAuth) Viewer(r *http.Request) (*Viewer, error) {
	token, ok := BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, &DebugAuthError{Code: http.StatusUnauthorized,
			Msg: "debug endpoints need \"Authorization: Bearer TOKEN\" with a ServiceAccount token (kubectl create token SERVICEACCOUNT -n NAMESPACE)"}
	}
	id, err := d.Tokens.Authenticate(r.Context(), token, nil, d.Admission.Gate(r.RemoteAddr))
	if err != nil {
		var over *OverloadError
		if errors.As(err, &over) {
			code := http.StatusServiceUnavailable
			if over.Limit == LimitPeerRate {
				code = http.StatusTooManyRequests
			}
			return nil, &DebugAuthError{Code: code, Msg: over.Error(), RetryAfter: over.RetryAfter}
		}
		if errors.Is(err, ErrTokenRefused) {
			return nil, &DebugAuthError{Code: http.StatusUnauthorized, Msg: err.Error()}
		}
		return nil, &DebugAuthError{Code: http.StatusServiceUnavailable, Msg: fmt.Sprintf("cannot check the token: %v", err)}
	}
	admin := slices.Contains(d.AdminNamespaces, id.Namespace) ||
		slices.Contains(d.AdminServiceAccounts, id.Namespace+"/"+id.ServiceAccount)
	return &Viewer{Identity: id, Admin: admin}, nil
}
