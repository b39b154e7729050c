package bootstrap

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
)

// debugOptions are what the debug server shows besides the discovery
// server's state.
type debugOptions struct {
	// auth authenticates debug requests (Kubernetes mode); nil: none.
	auth *security.DebugAuth
	// replica names this server in /debug/version.
	replica string
	// sections are the config sources' parts of /debug/configz.
	sections []debug.Section
	// registry is every metric of the process, served at /metrics.
	registry *prometheus.Registry
}

// debugHandler is the debug and metrics server's handler: the discovery
// server's debug endpoints with the parts the assembly owns, /metrics
// over the process's one registry and Go's profiles, behind the same
// guard (metrics open, pprof for debug admins) and answering GET and HEAD
// only. pprof is mounted here rather than on http.DefaultServeMux so
// nothing else can expose it by accident.
func debugHandler(ds *xds.DiscoveryServer, o debugOptions) http.Handler {
	mux := http.NewServeMux()
	debug.Register(mux, debug.Options{
		State:    ds,
		Auth:     o.auth,
		Replica:  o.replica,
		Sections: o.sections,
		Endpoints: []debug.Endpoint{
			{Path: "/metrics", Description: "Prometheus metrics.", Access: debug.AccessOpen,
				Handler: promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{Registry: o.registry})},
			{Path: "/debug/pprof/", Description: "Go runtime profiles (net/http/pprof).", Access: debug.AccessAdmin,
				Handler: http.HandlerFunc(pprof.Index)},
		},
	})
	// The rest of pprof, listed under /debug/pprof/.
	for _, p := range []struct {
		path string
		h    http.HandlerFunc
	}{
		{"/debug/pprof/cmdline", pprof.Cmdline},
		{"/debug/pprof/profile", pprof.Profile},
		{"/debug/pprof/symbol", pprof.Symbol},
		{"/debug/pprof/trace", pprof.Trace},
	} {
		mux.Handle(p.path, debug.ReadOnly(debug.Guard(o.auth, debug.AccessAdmin, p.h)))
	}
	return debug.ReadOnly(mux)
}
