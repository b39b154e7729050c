package debug

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"go.uber.org/goleak"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeState answers as a server with one proxy, "gw" in namespace
// "tenant", would; the server's own snapshots are tested in package xds.
type fakeState struct {
	ready   bool
	why     string
	noView  bool
	dumpErr error
}

func (f *fakeState) Configz() (debugapi.Configz, error) {
	return debugapi.Configz{Configs: []debugapi.ConfigzObject{}, Errors: []debugapi.ConfigzError{}}, nil
}

func (f *fakeState) ProxyConfig(id string) (ProxyConfig, bool) {
	if id != "gw" {
		return ProxyConfig{}, false
	}
	pc := ProxyConfig{Namespace: "tenant"}
	if !f.noView {
		pc.Dump = func() (*admin.ConfigDump, error) { return &admin.ConfigDump{}, f.dumpErr }
	}
	return pc, true
}

func (f *fakeState) Syncz(*security.Viewer) debugapi.Syncz {
	return debugapi.Syncz{Proxies: []debugapi.SyncProxy{}}
}
func (f *fakeState) Adsz(*security.Viewer) debugapi.Adsz {
	return debugapi.Adsz{Proxies: []debugapi.AdszProxy{}}
}
func (f *fakeState) Readiness() (bool, string) { return f.ready, f.why }

// metrics stands for an endpoint the assembly adds.
var metrics = Endpoint{Path: "/metrics", Description: "Prometheus metrics.", Access: AccessOpen,
	Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })}

func serve(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	if opts.State == nil {
		opts.State = &fakeState{ready: true}
	}
	srv := httptest.NewServer(NewMux(opts))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func getJSON[T any](t *testing.T, srv *httptest.Server, path string, wantCode int) T {
	t.Helper()
	code, body := get(t, srv, path)
	if code != wantCode {
		t.Fatalf("GET %s = %d %s, want %d", path, code, body, wantCode)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return out
}

// /debug/list shows the server's endpoints and those the assembly adds,
// sorted by path, each described and mounted.
func TestDebugList(t *testing.T) {
	srv := serve(t, Options{Endpoints: []Endpoint{metrics}})
	list := getJSON[debugapi.List](t, srv, "/debug/list", 200)
	var paths []string
	for _, ep := range list.Endpoints {
		paths = append(paths, ep.Path)
		if ep.Description == "" {
			t.Errorf("%s has no description", ep.Path)
		}
	}
	want := []string{"/debug/adsz", "/debug/config_dump", "/debug/configz", "/debug/list", "/debug/syncz", "/debug/version", "/healthz/ready", "/metrics"}
	if !slices.Equal(paths, want) {
		t.Errorf("listed %v, want %v", paths, want)
	}
	// Every listed endpoint is mounted.
	for _, p := range paths {
		if p == "/debug/config_dump" {
			continue // needs a proxy; covered below
		}
		if code, body := get(t, srv, p); code == 404 {
			t.Errorf("GET %s = 404 %s", p, body)
		}
	}
}

// /debug/version names the build and the replica that answers.
func TestDebugVersion(t *testing.T) {
	srv := serve(t, Options{Replica: "wayfinder-0"})
	v := getJSON[debugapi.VersionInfo](t, srv, "/debug/version", 200)
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || !strings.Contains(v.Platform, "/") || v.Replica != "wayfinder-0" {
		t.Errorf("version %+v, want a version, Go version, platform and the replica", v)
	}
}

// /healthz/ready is 200 "ready" when the server is, else 503 with why.
func TestReady(t *testing.T) {
	for _, st := range []*fakeState{{ready: true}, {why: "draining for shutdown"}} {
		code, body := get(t, serve(t, Options{State: st}), "/healthz/ready")
		want, wantCode := "ready\n", 200
		if !st.ready {
			want, wantCode = "not ready: draining for shutdown\n", 503
		}
		if code != wantCode || string(body) != want {
			t.Errorf("ready=%v: %d %q, want %d %q", st.ready, code, body, wantCode, want)
		}
	}
}

// config_dump's refusals: no proxyID, an unknown proxy, another
// namespace's proxy, a proxy without config yet, a dump that fails.
func TestConfigDumpErrors(t *testing.T) {
	srv := serve(t, Options{})
	if e := getJSON[debugapi.Error](t, srv, "/debug/config_dump", 400); !strings.Contains(e.Error, "proxyID") {
		t.Errorf("without proxyID: %q", e.Error)
	}
	if e := getJSON[debugapi.Error](t, srv, "/debug/config_dump?proxyID=nobody", 404); !strings.Contains(e.Error, `"nobody"`) {
		t.Errorf("unknown proxy: %q", e.Error)
	}
	if code, body := get(t, srv, "/debug/config_dump?proxyID=gw"); code != 200 || !json.Valid(body) {
		t.Errorf("config_dump = %d %s", code, body)
	}

	call := func(st State, v *security.Viewer) (int, string) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(security.WithViewer(context.Background(), v), http.MethodGet, "/debug/config_dump?proxyID=gw", nil)
		handlers{Options{State: st}}.configDump(rec, r)
		return rec.Code, rec.Body.String()
	}
	other := &security.Viewer{Identity: &model.Identity{Namespace: "other", ServiceAccount: "sa"}}
	if code, body := call(&fakeState{}, other); code != 403 || !strings.Contains(body, `namespace \"tenant\"`) {
		t.Errorf("another namespace's viewer: %d %s", code, body)
	}
	own := &security.Viewer{Identity: &model.Identity{Namespace: "tenant", ServiceAccount: "sa"}}
	if code, body := call(&fakeState{}, own); code != 200 {
		t.Errorf("the proxy's namespace's viewer: %d %s", code, body)
	}
	if code, body := call(&fakeState{noView: true}, nil); code != 503 || !strings.Contains(body, "no config yet") {
		t.Errorf("no view yet: %d %s", code, body)
	}
	if code, body := call(&fakeState{dumpErr: errors.New("broken")}, nil); code != 500 || !strings.Contains(body, "broken") {
		t.Errorf("a failing dump: %d %s", code, body)
	}
}

// With authentication, a request without a token is refused (401 with a
// Bearer challenge) everywhere but the open endpoints, unknown paths
// included.
func TestGuardRefusesRequestsWithoutToken(t *testing.T) {
	srv := serve(t, Options{Auth: &security.DebugAuth{}, Endpoints: []Endpoint{metrics}})
	for _, p := range []string{"/debug/configz", "/debug/syncz", "/debug/adsz", "/debug/list", "/debug/config_dump?proxyID=gw", "/nowhere"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("GET %s without a token = %d, WWW-Authenticate %q; want 401, Bearer", p, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	for _, p := range []string{"/debug/version", "/healthz/ready", "/metrics"} {
		if code, body := get(t, srv, p); code != 200 {
			t.Errorf("GET %s without a token = %d %s, want 200", p, code, body)
		}
	}
}

// Debug endpoints, the ones the assembly adds and readiness answer GET
// and HEAD only.
func TestDebugEndpointsAnswerOnlyGetAndHead(t *testing.T) {
	opts := Options{State: &fakeState{ready: true}, Endpoints: []Endpoint{metrics}}
	srv := serve(t, opts)
	for _, ep := range endpoints(opts) {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, "TRACE"} {
			req, err := http.NewRequest(method, srv.URL+ep.Path, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s = %d, Allow %q; want 405, GET, HEAD", method, ep.Path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		resp, err := http.Head(srv.URL + ep.Path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s refused", ep.Path)
		}
	}
	if code, _ := get(t, srv, "/metrics"); code != http.StatusOK {
		t.Errorf("GET /metrics = %d", code)
	}
}
