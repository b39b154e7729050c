package debug

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/version"
)

// handlers render State's snapshots.
type handlers struct{ opts Options }

func (h handlers) configz(w http.ResponseWriter, _ *http.Request) {
	out, err := h.opts.State.Configz()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	body, err := withSections(out, h.opts.Sections)
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// configDump serves the view a proxy is being served, in Envoy's admin
// ConfigDump form (what Envoy's /config_dump shows), as protojson.
func (h handlers) configDump(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("proxyID")
	if id == "" {
		writeError(w, http.StatusBadRequest, "missing query parameter proxyID (a connected proxy's node id; see /debug/adsz)")
		return
	}
	pc, ok := h.opts.State.ProxyConfig(id)
	viewer := security.ViewerFrom(r.Context())
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Sprintf("proxy %q is not connected (see /debug/adsz)", id))
		return
	case !viewer.SeesNamespace(pc.Namespace):
		writeError(w, http.StatusForbidden, fmt.Sprintf("proxy %q is in namespace %q: %s sees only its own namespace's proxies",
			id, pc.Namespace, viewer.Identity.String()))
		return
	case pc.Dump == nil:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("proxy %q has no config yet: waiting for config sync and the first push", id))
		return
	}
	dump, err := pc.Dump()
	if r.URL.Query().Get("withoutEnvoyFilters") == "true" && pc.Unpatched != nil {
		// The same proxy's config translated without its EnvoyFilters;
		// when none applies it is the served one.
		if un, uerr := pc.Unpatched(); uerr != nil || un != nil {
			dump, err = un, uerr
		}
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("building config dump for %q: %v", id, err))
		return
	}
	b, err := protojson.Marshal(dump)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("encoding config dump for %q: %v", id, err))
		return
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	buf.WriteByte('\n')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

func (h handlers) syncz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.opts.State.Syncz(security.ViewerFrom(r.Context())))
}

func (h handlers) adsz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.opts.State.Adsz(security.ViewerFrom(r.Context())))
}

func (h handlers) list(w http.ResponseWriter, _ *http.Request) {
	var out debugapi.List
	for _, ep := range endpoints(h.opts) {
		out.Endpoints = append(out.Endpoints, debugapi.Endpoint{Path: ep.Path, Description: ep.Description})
	}
	writeJSON(w, http.StatusOK, out)
}

func (h handlers) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, debugapi.VersionInfo{Info: version.Get(), Replica: h.opts.Replica})
}

func (h handlers) ready(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok, why := h.opts.State.Readiness(); !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + why + "\n"))
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("ready\n"))
}
