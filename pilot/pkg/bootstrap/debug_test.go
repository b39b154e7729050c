package bootstrap

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
)

// The debug server lists and mounts the discovery server's endpoints and
// the assembly's (/metrics over the process's registry, pprof), answers
// GET and HEAD only, and serves pprof's index.
func TestDebugServerEndpoints(t *testing.T) {
	s := startFileServer(t, SecurityOptions{})
	base := "http://" + s.HTTPAddr().String()
	do := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, body := do(http.MethodGet, "/debug/list")
	var list debugapi.List
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("/debug/list: %v\n%s", err, body)
	}
	var paths []string
	for _, ep := range list.Endpoints {
		paths = append(paths, ep.Path)
	}
	want := []string{"/debug/adsz", "/debug/config_dump", "/debug/configz", "/debug/list", "/debug/pprof/", "/debug/syncz", "/debug/version", "/healthz/ready", "/metrics"}
	if !slices.Equal(paths, want) {
		t.Errorf("listed %v, want %v", paths, want)
	}
	for _, p := range paths {
		if p == "/debug/config_dump" {
			continue // needs a proxy
		}
		if code, body := do(http.MethodGet, p); code == http.StatusNotFound {
			t.Errorf("GET %s = 404 %s", p, body)
		}
	}
	if code, body := do(http.MethodGet, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ = %d", code)
	}
	// The discovery server's, the process's and the debug listener's
	// metrics are one registry.
	_, metrics := do(http.MethodGet, "/metrics")
	for _, m := range []string{"pilot_xds ", "go_goroutines ", "wayfinder_http_connections_refused_total"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	for _, p := range []string{"/debug/pprof/symbol", "/debug/pprof/", "/metrics", "/debug/configz"} {
		if code, _ := do(http.MethodPost, p); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d, want 405", p, code)
		}
	}
}

// With debug authentication, pprof (index and handlers) is for debug
// admins as the discovery server's admin endpoints are, and /metrics
// stays open.
func TestDebugServerGuardsPprof(t *testing.T) {
	reg := prometheus.NewRegistry()
	ds := xds.NewDiscoveryServer(xds.Options{Store: memory.New(nil), Registry: reg})
	srv := httptest.NewServer(debugHandler(ds, debugOptions{auth: &security.DebugAuth{}, registry: reg}))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/profile", "/debug/pprof/symbol", "/debug/pprof/trace", "/debug/configz"} {
		if code, challenge := get(p); code != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer") {
			t.Errorf("GET %s without a token = %d (%q), want 401 with a Bearer challenge", p, code, challenge)
		}
	}
	if code, _ := get("/metrics"); code != http.StatusOK {
		t.Errorf("GET /metrics without a token = %d, want 200", code)
	}
}
