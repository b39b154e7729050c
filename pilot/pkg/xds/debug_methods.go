package xds

import "net/http"

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
