package debug

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// State is what the endpoints show, read from the discovery server. Each
// method returns a snapshot the caller owns, with every list sorted.
type State interface {
	// Configz is every config object in the store, the config errors
	// standing now, the secrets refused to connected proxies and the
	// per-object status: /debug/configz without its Sections.
	Configz() (debugapi.Configz, error)
	// ProxyConfig is the config a connected proxy is being served; false
	// when no proxy of that node id is connected.
	ProxyConfig(id string) (ProxyConfig, bool)
	// Syncz and Adsz show the proxies v may see (all for a nil viewer).
	Syncz(v *security.Viewer) debugapi.Syncz
	Adsz(v *security.Viewer) debugapi.Adsz
	// Readiness reports whether the server is ready to serve and, when it
	// is not, why ("draining for shutdown", "waiting for ...").
	Readiness() (ready bool, why string)
}

// ProxyConfig is one connected proxy's config, for /debug/config_dump.
type ProxyConfig struct {
	// Namespace is the proxy's, which decides who may see it.
	Namespace string
	// Dump renders the config in Envoy's admin ConfigDump form; nil while
	// the proxy has no config yet (before config sync and the first push).
	Dump func() (*admin.ConfigDump, error)
	// Unpatched renders the config the proxy would be served without its
	// EnvoyFilters (translated on demand); nil result when none applies.
	Unpatched func() (*admin.ConfigDump, error)
}

// Options configure Register.
type Options struct {
	// State is the server's state. Required.
	State State
	// Auth, when set, authenticates every request (Kubernetes mode) and
	// enforces each endpoint's Access. Nil serves every request to anyone
	// who reaches the port (file mode binds it to loopback).
	Auth *security.DebugAuth
	// Replica names this server (its pod name) in /debug/version.
	Replica string
	// Sections are added to /debug/configz after the server's own fields.
	Sections []Section
	// Endpoints are further endpoints the assembly owns (/metrics,
	// /debug/pprof/): mounted, guarded and listed as the server's are.
	Endpoints []Endpoint
}

// Endpoint is one HTTP endpoint of the debug server.
type Endpoint struct {
	Path string
	// Description is its line in /debug/list.
	Description string
	// Access is who may call it when requests are authenticated.
	Access  Access
	Handler http.Handler
}

// endpoints is the one list of endpoints, sorted by path: Register mounts
// it and /debug/list shows it.
func endpoints(opts Options) []Endpoint {
	h := handlers{opts}
	eps := []Endpoint{
		{"/debug/configz", "Every config object (kind, namespace, name, source, spec) and the config errors standing now.", AccessAdmin, http.HandlerFunc(h.configz)},
		{"/debug/config_dump", "Config sent to one proxy (?proxyID=<node id>) in Envoy's admin ConfigDump format.", AccessScoped, http.HandlerFunc(h.configDump)},
		{"/debug/syncz", "Per proxy and xDS type: version and nonce sent, version ACKed, last NACK.", AccessScoped, http.HandlerFunc(h.syncz)},
		{"/debug/adsz", "Connected proxies: identity, labels, gateway group, streams.", AccessScoped, http.HandlerFunc(h.adsz)},
		{"/debug/list", "This list.", AccessAdmin, http.HandlerFunc(h.list)},
		{"/debug/version", "Build version and the replica answering.", AccessOpen, http.HandlerFunc(h.version)},
		{"/healthz/ready", "200 once config has synced and the first push is done, else 503 (and 503 while draining for shutdown).", AccessOpen, http.HandlerFunc(h.ready)},
	}
	eps = append(eps, opts.Endpoints...)
	slices.SortFunc(eps, func(a, b Endpoint) int { return strings.Compare(a.Path, b.Path) })
	return eps
}

// Register mounts every endpoint on mux, each behind Guard and answering
// GET and HEAD only (ReadOnly). Any other path (a 404 from the mux) is
// answered only after authentication as an admin, so unknown paths tell
// an anonymous caller nothing.
func Register(mux *http.ServeMux, opts Options) {
	for _, ep := range endpoints(opts) {
		mux.Handle(ep.Path, ReadOnly(Guard(opts.Auth, ep.Access, ep.Handler)))
	}
	mux.Handle("/", ReadOnly(Guard(opts.Auth, AccessAdmin, http.NotFoundHandler())))
}

// NewMux returns a new mux with Register's endpoints.
func NewMux(opts Options) *http.ServeMux {
	mux := http.NewServeMux()
	Register(mux, opts)
	return mux
}

// writeJSON renders v indented. Values are built from sorted lists, so the
// output is stable for equal state.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, debugapi.Error{Error: msg})
}
