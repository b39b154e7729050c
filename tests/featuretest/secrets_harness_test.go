package featuretest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// The secure port's authenticating interceptor comes with the TLS port;
// here a stream interceptor stands in for it, turning the test client's
// "x-test-identity: NAMESPACE/SERVICEACCOUNT" metadata into the verified
// identity (model.WithIdentity). A stream without it is unauthenticated,
// as on the plaintext port.
const identityHeader = "x-test-identity"

func identityInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	if v := md.Get(identityHeader); len(v) == 1 {
		ns, sa, _ := strings.Cut(v[0], "/")
		ctx := model.WithIdentity(ss.Context(), &model.Identity{Namespace: ns, ServiceAccount: sa, Method: model.MethodToken})
		return handler(srv, &identityStream{ss, ctx})
	}
	return handler(srv, ss)
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }

// secretServer is the discovery server as Kubernetes mode wires it
// (Secrets store and authorizer), over a real gRPC server on loopback,
// with the config given as YAML.
type secretServer struct {
	ds   *xds.DiscoveryServer
	addr string
	http *httptest.Server
}

func newSecretServer(t *testing.T, yaml string, secrets map[string][2][]byte, authz func(ds *xds.DiscoveryServer) model.SecretAuthorizer) *secretServer {
	t.Helper()
	cfgs, errs := manifest.Parse("secrets.yaml", []byte(yaml), manifest.Options{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	store := model.SecretStoreFunc(func(ns, name string) ([]byte, []byte, bool) {
		p, ok := secrets[ns+"/"+name]
		return p[0], p[1], ok
	})
	opts := xds.Options{
		Store:    memory.New(cfgs),
		Secrets:  store,
		Logger:   serverenv.Logger(t, 0),
		Debounce: debounce.Options{QuietPeriod: time.Millisecond, MaxDelay: 10 * time.Millisecond},
	}
	var ds *xds.DiscoveryServer
	var authorizer model.SecretAuthorizer
	if authz != nil {
		// The authorizer's pushes go to the server built next.
		opts.SecretAuthorizer = lazyAuthorizer{&authorizer}
	}
	ds = xds.NewDiscoveryServer(opts)
	if authz != nil {
		authorizer = authz(ds)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.StreamInterceptor(identityInterceptor), grpc.WaitForHandlers(true))
	ds.Register(g)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Serve(lis) })
	wg.Go(func() { ds.Run(ctx) })
	s := &secretServer{ds: ds, addr: lis.Addr().String(), http: httptest.NewServer(debug.NewMux(debug.Options{State: ds}))}
	t.Cleanup(func() { cancel(); g.Stop(); s.http.Close(); wg.Wait() })
	ds.Synced()
	select {
	case <-ds.FirstPushDone():
	case <-time.After(waitTimeout):
		t.Fatal("no first push")
	}
	return s
}

// lazyAuthorizer lets the authorizer be built after the server it pushes.
type lazyAuthorizer struct{ a *model.SecretAuthorizer }

func (l lazyAuthorizer) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	return (*l.a).CanGetSecret(id, ref)
}

func (l lazyAuthorizer) CanListSecrets(id model.Identity, namespace string) (bool, string) {
	return (*l.a).CanListSecrets(id, namespace)
}

func (s *secretServer) get(t *testing.T, path string, out any) string {
	t.Helper()
	resp, err := http.Get(s.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return string(body)
}

// rawClient is a bare SotW ADS stream that keeps every byte it receives,
// so a test can check that key material never arrived in any form.
type rawClient struct {
	t        *testing.T
	id       string
	stream   discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node     *discovery.DiscoveryRequest
	received bytes.Buffer
}

// dialRaw connects as pod.ns with labels; identity "NS/SA" authenticates
// the stream, "" leaves it unauthenticated.
func dialRaw(t *testing.T, addr, pod, ns, identity string, labels map[string]string) *rawClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); conn.Close() })
	if identity != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, identityHeader, identity)
	}
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: ns, Labels: labels})
	return &rawClient{t: t, id: node.GetId(), stream: stream, node: &discovery.DiscoveryRequest{Node: node}}
}

// fetch requests a type (named resources, or all when none) and returns
// the response.
func (c *rawClient) fetch(typeURL string, names ...string) *discovery.DiscoveryResponse {
	c.t.Helper()
	req := proto.Clone(c.node).(*discovery.DiscoveryRequest)
	req.TypeUrl, req.ResourceNames = typeURL, names
	if err := c.stream.Send(req); err != nil {
		c.t.Fatal(err)
	}
	type result struct {
		resp *discovery.DiscoveryResponse
		err  error
	}
	got := make(chan result, 1)
	go func() {
		r, err := c.stream.Recv()
		got <- result{r, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			c.t.Fatalf("%s: %v", typeURL, r.err)
		}
		b, err := proto.Marshal(r.resp)
		if err != nil {
			c.t.Fatal(err)
		}
		c.received.Write(b)
		return r.resp
	case <-time.After(waitTimeout):
		c.t.Fatalf("no %s response", typeURL)
		return nil
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ackAndNext ACKs resp and returns the next response of its type.
func (c *rawClient) ackAndNext(resp *discovery.DiscoveryResponse, names ...string) *discovery.DiscoveryResponse {
	c.t.Helper()
	req := proto.Clone(c.node).(*discovery.DiscoveryRequest)
	req.TypeUrl, req.ResourceNames = resp.GetTypeUrl(), names
	req.VersionInfo, req.ResponseNonce = resp.GetVersionInfo(), resp.GetNonce()
	if err := c.stream.Send(req); err != nil {
		c.t.Fatal(err)
	}
	got := make(chan *discovery.DiscoveryResponse, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := c.stream.Recv()
		if err != nil {
			errc <- err
			return
		}
		got <- r
	}()
	select {
	case r := <-got:
		b, _ := proto.Marshal(r)
		c.received.Write(b)
		return r
	case err := <-errc:
		c.t.Fatalf("%s: %v", resp.GetTypeUrl(), err)
	case <-time.After(waitTimeout):
		c.t.Fatalf("no %s response after the ACK", resp.GetTypeUrl())
	}
	return nil
}
