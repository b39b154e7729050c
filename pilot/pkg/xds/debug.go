package xds

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
)

// debugEndpoint is one HTTP endpoint of the debug server. Handlers are
// thin: each takes a copy of the state it shows (under mu, briefly) and
// renders it as JSON with every list sorted.
type debugEndpoint struct {
	path        string
	description string
	handler     http.HandlerFunc
	// access is who may call it when debug requests are authenticated.
	access debugAccess
}

// debugEndpoints is the one list of endpoints: RegisterDebug mounts it and
// /debug/list shows it.
func (s *DiscoveryServer) debugEndpoints() []debugEndpoint {
	eps := []debugEndpoint{
		{"/debug/configz", "Every config object (kind, namespace, name, source, spec) and the config errors standing now.", s.handleConfigz, accessAdmin},
		{"/debug/config_dump", "Config sent to one proxy (?proxyID=<node id>) in Envoy's admin ConfigDump format.", s.handleConfigDump, accessScoped},
		{"/debug/syncz", "Per proxy and xDS type: version and nonce sent, version ACKed, last NACK.", s.handleSyncz, accessScoped},
		{"/debug/adsz", "Connected proxies: identity, labels, gateway group, streams.", s.handleAdsz, accessScoped},
		{"/debug/list", "This list.", s.handleList, accessAdmin},
		{"/debug/version", "Build version and the replica answering.", s.handleVersion, accessOpen},
		{"/healthz/ready", "200 once config has synced and the first push is done, else 503 (and 503 while draining for shutdown).", s.handleReady, accessOpen},
		{"/metrics", "Prometheus metrics.", s.metrics.handler().ServeHTTP, accessOpen},
		{"/debug/pprof/", "Go runtime profiles (net/http/pprof).", pprof.Index, accessAdmin},
	}
	slices.SortFunc(eps, func(a, b debugEndpoint) int { return strings.Compare(a.path, b.path) })
	return eps
}

// RegisterDebug mounts every debug endpoint, readiness, metrics and pprof
// on mux, each answering GET and HEAD only (ReadOnly). pprof is mounted here rather than on http.DefaultServeMux so
// nothing else can expose it by accident.
func (s *DiscoveryServer) RegisterDebug(mux *http.ServeMux) {
	for _, ep := range s.debugEndpoints() {
		mux.Handle(ep.path, ReadOnly(s.guard(ep.access, ep.handler)))
	}
	mux.Handle("/debug/pprof/cmdline", ReadOnly(s.guard(accessAdmin, pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", ReadOnly(s.guard(accessAdmin, pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", ReadOnly(s.guard(accessAdmin, pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", ReadOnly(s.guard(accessAdmin, pprof.Trace)))
	// Any other path (a 404 from the mux) is answered only after
	// authentication, so unknown paths tell an anonymous caller nothing.
	mux.Handle("/", ReadOnly(s.guard(accessAdmin, http.NotFound)))
}

// DebugMux returns a new mux with RegisterDebug's endpoints.
func (s *DiscoveryServer) DebugMux() *http.ServeMux {
	mux := http.NewServeMux()
	s.RegisterDebug(mux)
	return mux
}

// MetricsHandler serves the server's metrics registry.
func (s *DiscoveryServer) MetricsHandler() http.Handler { return s.metrics.handler() }

// DebugEndpoint describes one endpoint in /debug/list.
type DebugEndpoint struct {
	Path        string `json:"path"`
	Description string `json:"description"`
}

func (s *DiscoveryServer) handleList(w http.ResponseWriter, _ *http.Request) {
	var out struct {
		Endpoints []DebugEndpoint `json:"endpoints"`
	}
	for _, ep := range s.debugEndpoints() {
		out.Endpoints = append(out.Endpoints, DebugEndpoint{Path: ep.path, Description: ep.description})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *DiscoveryServer) handleReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case s.Draining():
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: draining for shutdown\n"))
	case s.Ready():
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ready\n"))
	case !s.synced.Load():
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: waiting for the config source to sync\n"))
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: waiting for the first push\n"))
	}
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

// DebugError is the body of a debug endpoint's error response.
type DebugError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, DebugError{Error: msg})
}
