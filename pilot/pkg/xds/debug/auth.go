package debug

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// Access is who may call a debug endpoint when debug requests are
// authenticated (Options.Auth; Kubernetes mode).
type Access int

const (
	// AccessAdmin: ServiceAccounts of an admin namespace only.
	AccessAdmin Access = iota
	// AccessScoped: any authenticated ServiceAccount; the handler shows
	// only proxies of the viewer's namespace (security.ViewerFrom).
	AccessScoped
	// AccessOpen: anyone, no token (metrics, readiness).
	AccessOpen
)

// Guard authenticates a request before h (401 without a valid token, 403
// beyond the viewer's rights) and passes the viewer to h in the request's
// context. Without auth every request passes with a nil viewer, which
// sees everything (file mode binds debug to loopback).
func Guard(auth *security.DebugAuth, access Access, h http.Handler) http.Handler {
	if auth == nil || access == AccessOpen {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := auth.Viewer(r)
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
		if access == AccessAdmin && !v.SeesAll() {
			writeError(w, http.StatusForbidden, r.URL.Path+" is for debug admins (--debug-admin-namespaces, --debug-admin-service-accounts); "+
				v.Identity.String()+" may read /debug/config_dump, /debug/syncz and /debug/adsz of its own namespace's proxies")
			return
		}
		h.ServeHTTP(w, r.WithContext(security.WithViewer(r.Context(), v)))
	})
}

// ReadOnly answers only GET and HEAD, with 405 and an Allow header
// otherwise: nothing on the debug server changes anything, so no other
// method has a meaning there, and refusing them early keeps request
// bodies out.
func ReadOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" not allowed: the debug server answers GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
