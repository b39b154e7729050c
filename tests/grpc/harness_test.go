// Package grpc_test drives real proxyless gRPC clients (gRPC-Go's xds
// resolver) against the in-process control plane (pilot/pkg/bootstrap, file
// mode) and real gRPC backends on 127.0.0.1, each answering with its own
// name. Config is written to the server's folder as ServiceEntries,
// DestinationRules and VirtualServices; tests observe what the clients do.
// RPC loops are bounded in count and time; waits are on RPC outcomes with
// deadlines, never sleeps.
package grpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// TestMain runs the tests, stops the shared Kubernetes cluster if a
// Kubernetes-mode test started one (kube_test.go), and then checks for
// leaked goroutines: with the cluster stopped, client connections to it
// have closed, and only klog's flush daemon, started at init, may remain.
func TestMain(m *testing.M) {
	code := cluster.Run(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run"),
			// gRPC-Go 1.85's xDS client builds the bootstrap's "tls"
			// channel credentials and drops their stop function
			// (internal/xds/xdsclient/clientimpl.go), so their file
			// watcher outlives the client (secure_test.go).
			goleak.IgnoreTopFunction("google.golang.org/grpc/credentials/tls/certprovider/pemfile.(*watcher).run")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// waitTimeout bounds every wait; tests normally finish well within it.
const waitTimeout = 20 * time.Second

// host is the service the tests route; port its only port.
const (
	host   = "echo.default.svc.cluster.local"
	port   = 7070
	target = "xds:///echo.default.svc.cluster.local:7070"
)

// delayHeader asks a backend to hold the response that many milliseconds
// (or until the RPC is cancelled).
const delayHeader = "x-delay-ms"

// backend is one gRPC server answering UnaryCall and CacheableUnaryCall
// with its name (SimpleResponse.hostname).
type backend struct {
	testpb.UnimplementedTestServiceServer
	name   string
	labels map[string]string
	port   int
}

func (b *backend) answer(ctx context.Context) (*testpb.SimpleResponse, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get(delayHeader)) > 0 {
		ms, _ := strconv.Atoi(md.Get(delayHeader)[0])
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return &testpb.SimpleResponse{Hostname: b.name}, nil
}

func (b *backend) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return b.answer(ctx)
}

func (b *backend) CacheableUnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return b.answer(ctx)
}

// startBackend serves a backend on a free loopback port until the test ends.
func startBackend(t *testing.T, name string, labels map[string]string) *backend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, labels: labels, port: lis.Addr().(*net.TCPAddr).Port}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return b
}

// serviceEntry is the echo service with the backends as STATIC endpoints.
func serviceEntry(bs ...*backend) string {
	var b strings.Builder
	b.WriteString(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: echo
  namespace: default
spec:
  hosts:
  - ` + host + `
  location: MESH_INTERNAL
  ports:
  - number: ` + strconv.Itoa(port) + `
    name: grpc
    protocol: GRPC
  resolution: STATIC
  endpoints:
`)
	for _, be := range bs {
		fmt.Fprintf(&b, "  - address: 127.0.0.1\n    ports:\n      grpc: %d\n    labels:\n", be.port)
		for k, v := range be.labels {
			fmt.Fprintf(&b, "      %s: %s\n", k, v)
		}
	}
	return b.String()
}

// subsetsRule defines a subset per version label.
func subsetsRule(versions ...string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: echo
  namespace: default
spec:
  host: ` + host + `
  subsets:
`)
	for _, v := range versions {
		fmt.Fprintf(&b, "  - name: %s\n    labels:\n      version: %s\n", v, v)
	}
	return b.String()
}

// echoVSHead opens the VirtualService default/echo for host echo; the
// tests append its http routes.
const echoVSHead = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: echo
  namespace: default
spec:
  hosts:
  - echo
  http:
`

type env struct {
	t      *testing.T
	dir    string
	server *bootstrap.Server
}

// newEnv writes files into a fresh config folder and starts the control
// plane on it, returning once the first push is computed.
func newEnv(t *testing.T, files map[string]string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	for name, data := range files {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir, Logger: serverenv.Logger(t, slog.LevelInfo)})
	return e
}

// write replaces a config file atomically, as editors and tools do.
func (e *env) write(name, data string) {
	e.t.Helper()
	serverenv.WriteFile(e.t, filepath.Join(e.dir, name), data)
}

// bootstrapJSON is a gRPC xDS bootstrap pointing at the control plane,
// with Istio's node identity for a proxyless client in namespace default.
func (e *env) bootstrapJSON(pod string) []byte {
	return e.bootstrapFor(e.server.GRPCAddr().String(), pod)
}

func (*env) bootstrapFor(addr, pod string) []byte {
	return []byte(`{
  "xds_servers": [{
    "server_uri": "` + addr + `",
    "channel_creds": [{"type": "insecure"}],
    "server_features": ["xds_v3"]
  }],
  "node": {
    "id": "sidecar~127.0.0.1~` + pod + `.default~default.svc.cluster.local",
    "metadata": {"GENERATOR": "grpc", "NAMESPACE": "default"},
    "locality": {}
  }
}`)
}

// client dials target through gRPC's xds resolver with its own bootstrap
// (and so its own xDS client and ADS stream).
func (e *env) client(pod string) (*grpc.ClientConn, testpb.TestServiceClient) {
	e.t.Helper()
	res, err := xds.NewXDSResolverWithConfigForTesting(e.bootstrapJSON(pod))
	if err != nil {
		e.t.Fatal(err)
	}
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(res))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cc.Close() })
	return cc, testpb.NewTestServiceClient(cc)
}

// call makes one UnaryCall with a per-RPC deadline and returns the name of
// the backend that answered.
func call(c testpb.TestServiceClient, md ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	r, err := c.UnaryCall(ctx, &testpb.SimpleRequest{})
	if err != nil {
		return "", err
	}
	return r.GetHostname(), nil
}

// waitUntil makes RPCs with do until ok accepts an outcome, failing the
// test after waitTimeout or maxTries RPCs. It is how a test waits for
// config to reach the client: the RPC outcome is the event.
func waitUntil(t *testing.T, what string, do func() (string, error), ok func(string, error) bool) {
	t.Helper()
	const maxTries = 20000
	poll.Seen(t, what, func() (string, bool) {
		last, err := do()
		return fmt.Sprintf("RPC answered %q, error %v", last, err), ok(last, err)
	}, poll.Timeout(waitTimeout), poll.Tries(maxTries), poll.Interval(0))
}

// counter tallies RPC outcomes safely from several goroutines.
type counter struct {
	mu     sync.Mutex
	byName map[string]int
	errs   []error
}

func (c *counter) add(name string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byName == nil {
		c.byName = map[string]int{}
	}
	if err != nil {
		c.errs = append(c.errs, err)
		return
	}
	c.byName[name]++
}

// xdsResolver is gRPC's xds resolver with a bootstrap naming the ADS
// server at addr and a proxyless node identity for pod.
func xdsResolver(addr, pod string) (resolver.Builder, error) {
	e := &env{}
	return xds.NewXDSResolverWithConfigForTesting(e.bootstrapFor(addr, pod))
}

func grpcInsecure() grpc.DialOption { return grpc.WithTransportCredentials(insecure.NewCredentials()) }

func newTestClient(cc *grpc.ClientConn) testpb.TestServiceClient {
	return testpb.NewTestServiceClient(cc)
}
