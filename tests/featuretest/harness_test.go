// Package featuretest drives the real pilot-discovery server (bootstrap,
// file source, ADS on 127.0.0.1:0) with Envoy-like ADS clients and asserts
// what the clients receive. Tests wait on client events, never on sleeps.
package featuretest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitTimeout = serverenv.WaitTimeout

type env struct {
	t      *testing.T
	dir    string
	server *bootstrap.Server
}

// newEnv writes files into a fresh config folder and starts the server on
// it, returning once the first push is computed.
func newEnv(t *testing.T, files map[string]string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	for name, data := range files {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir})
	return e
}

// write replaces a config file atomically, as editors and tools do.
func (e *env) write(name, data string) {
	e.t.Helper()
	serverenv.WriteFile(e.t, filepath.Join(e.dir, name), data)
}

func (e *env) remove(name string) {
	e.t.Helper()
	if err := os.Remove(filepath.Join(e.dir, name)); err != nil {
		e.t.Fatal(err)
	}
}

// gateway connects an Envoy-like gateway with Istio's node identity.
func (e *env) gateway(pod string, labels map[string]string, reject func(string, []*anypb.Any) error) *adsc.Client {
	e.t.Helper()
	return serverenv.Gateway(e.t, e.server.GRPCAddr().String(), pod, labels, reject)
}

// waitFor waits until cond holds for the client's accepted state.
func waitFor(t *testing.T, c *adsc.Client, what string, cond func(adsc.State) bool) adsc.State {
	t.Helper()
	return serverenv.WaitFor(t, c, what, waitTimeout, cond)
}

func describe(s adsc.State) string { return serverenv.Describe(s) }

// get fetches a path from the debug HTTP server.
func (e *env) get(path string) (int, string) {
	e.t.Helper()
	resp, err := http.Get("http://" + e.server.HTTPAddr().String() + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
