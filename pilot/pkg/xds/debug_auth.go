package xds

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// debugAccess is who may call a debug endpoint when debug requests are
// authenticated (Options.DebugAuth; Kubernetes mode).
type debugAccess int

const (
	// accessAdmin: ServiceAccounts of an admin namespace only.
	accessAdmin debugAccess = iota
	// accessScoped: any authenticated ServiceAccount; the handler shows
	// only proxies of the viewer's namespace (security.ViewerFrom).
	accessScoped
	// accessOpen: anyone, no token (metrics, readiness).
	accessOpen
)

// guard authenticates a request before h (401 without a valid token, 403
// beyond the viewer's rights) and passes the viewer to h in the request's
// context. Without DebugAuth every request passes with a nil viewer, which
// sees everything (file mode binds debug to loopback).
func (s *DiscoveryServer) guard(access debugAccess, h http.HandlerFunc) http.Handler {
	if s.debugAuth == nil || access == accessOpen {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.debugAuth.Viewer(r)
		if err != nil {
			code := http.StatusUnauthorized
			var ae *security.DebugAuthError
			if errors.As(err, &ae) {
				code = ae.Code
				if ae.RetryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.RetryAfter.Seconds()))))
				}
			}
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="wayfinder-debug"`)
			}
			writeError(w, code, err.Error())
			return
		}
		if access == accessAdmin && !v.SeesAll() {
			writeError(w, http.StatusForbidden, r.URL.Path+" is for debug admins (--debug-admin-namespaces, --debug-admin-service-accounts); "+
				v.Identity.String()+" may read /debug/config_dump, /debug/syncz and /debug/adsz of its own namespace's proxies")
			return
		}
		h(w, r.WithContext(security.WithViewer(r.Context(), v)))
	})
}
