package kube

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// The flood: junk tokens shaped like ServiceAccount tokens (a JWT of the
// usual size nobody issued), each new, so none is answered from a cache,
// on streams that never give up, from floodSources loopback addresses
// other than the gateway's.
const (
	floodPerSecond = 1000
	floodFor       = 4 * time.Second
	// gatewayBound is how long a real gateway may take to be served while
	// the flood runs, retrying refusals as Envoy does.
	gatewayBound = 5 * time.Second
	// renewGapBound: the Lease is renewed every 2 s; a gap past this
	// means renewals failed.
	renewGapBound = 5 * time.Second
	leaseName     = "wayfinder-istio-status"
	floodPod      = "wayfinder-0"
)

var floodSources = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}

// A flood of junk-token streams on the secure port, 1,000 a second for
// four seconds from four addresses, beside a gateway with a real token
// and the Lease of the status writer: the gateway is served within
// gatewayBound (refused meanwhile at most with codes Envoy retries), the
// Lease holder keeps renewing every RetryPeriod, the flood is refused
// before TokenReview (counted), and a token over the header bound never
// reaches the server's authentication at all.
func TestJunkTokenFloodLeavesGatewaysAndLeaseAlone(t *testing.T) {
	c, ns := newCluster(t, "flood")
	e := &secureEnv{env: clientEnv(t, c, ns), wf: ns}
	e.createGateway("gw")
	e.createVS(e.virtualService("first", "first.example.com", "x.example.com", ""))
	e.server = startServer(t, bootstrap.Options{
		Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns}, PodName: floodPod, PodNamespace: ns,
		Security: bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"},
	})
	cm, err := e.kube.CoreV1().ConfigMaps(ns).Get(ctx, security.RootCertConfigMap, metav1.GetOptions{})
	e.must(err)
	e.rootPEM = []byte(cm.Data[security.RootCertKey])
	leases := e.kube.CoordinationV1().Leases(ns)
	poll.Until(t, "the status writer to take Lease "+ns+"/"+leaseName, func() bool {
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == floodPod
	}, poll.Timeout(waitTimeout), poll.Interval(100*time.Millisecond))
	token := e.c.Token(t, ns, "gateway", []string{"wayfinder"}, time.Hour)
	reviewsBefore := apiServerTokenReviews(t, e)

	// Watch the Lease through the flood: the longest time between two
	// renewals the API server recorded.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	gapc := make(chan time.Duration, 1)
	go func() { gapc <- watchRenewals(watchCtx, e, ns) }()

	floodCtx, stopFlood := context.WithCancel(context.Background())
	defer stopFlood()
	f := startJunkFlood(t, floodCtx, e, floodSources, floodPerSecond, floodFor)

	// One second into the flood, a real gateway connects.
	time.Sleep(time.Second) // lets the flood build up; the flood's own clock
	waited, attempts, err := connectRetrying(e, "gw-real", token, gatewayBound)
	if err != nil {
		t.Errorf("a gateway with a valid token, during the flood: %v after %v (%d attempts)", err, waited, attempts)
	} else {
		t.Logf("a gateway with a valid token was served %v after it first dialed, during the flood (%d attempts)", waited.Round(time.Millisecond), attempts)
	}

	f.wait()
	stopWatch()
	gap := <-gapc
	stopFlood()
	t.Logf("flood: %d junk streams opened in %v from %d addresses; outcomes %v; longest Lease renewal gap %v; TokenReviews the API server answered %d",
		f.opened.Load(), floodFor, len(floodSources), f.outcomes(), gap.Round(time.Millisecond), apiServerTokenReviews(t, e)-reviewsBefore)
	if gap > renewGapBound {
		t.Errorf("the Lease went %v without renewal during the flood, want at most %v", gap, renewGapBound)
	}
	if l, err := leases.Get(ctx, leaseName, metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != floodPod {
		t.Errorf("after the flood the Lease is %v (%v), want still held by %s", l, err, floodPod)
	}
	if n := e.metric(`wayfinder_auth_admission_refused_total{limit="peer_rate",port="xds"}`); n == 0 {
		t.Error("no junk stream was refused by the per-address limit")
	}
	// A token past the header bound is refused by HTTP/2 before any
	// authentication (gRPC's default would accept 16 MiB).
	huge := strings.Repeat("A", 100<<10)
	if err := e.deltaClusters(ns, "gw-huge", "x."+huge+".y"); err == nil || status.Code(err) == codes.Unauthenticated {
		t.Errorf("a 100 KiB token: %v, want refused before authentication", err)
	}

	// The gateway stays served after the flood.
	good, err := e.dial(ns, "gw-after", token, nil)
	e.must(err)
	waitFor(t, good, "config after the flood", func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
}

// connectRetrying connects a gateway the way Envoy does: a stream refused
// with a code Envoy retries is opened again after a jittered backoff
// (250 ms doubling to 2 s), until it is served or within runs out. It
// returns how long it took from the first dial.
func connectRetrying(e *secureEnv, pod, token string, within time.Duration) (time.Duration, int, error) {
	return connectRetryingFrom(e, pod, token, "", within)
}

// connectRetryingFrom is connectRetrying from loopback address src.
func connectRetryingFrom(e *secureEnv, pod, token, src string, within time.Duration) (time.Duration, int, error) {
	start := time.Now()
	deadline := start.Add(within)
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		retry, err := connectOnce(e, pod, token, src, deadline)
		if !retry {
			return time.Since(start), attempt, err
		}
		wait := backoff/2 + time.Duration(time.Now().UnixNano()%int64(backoff/2))
		if time.Now().Add(wait).After(deadline) {
			return time.Since(start), attempt, fmt.Errorf("still refused after %v: %w", within, err)
		}
		time.Sleep(wait) // Envoy's retry backoff, which this models
		backoff = min(2*backoff, 2*time.Second)
	}
}

// connectOnce dials once (from loopback address src, when given) and
// waits until the gateway is served (nil), refused with a code Envoy
// retries (retry), or anything else.
func connectOnce(e *secureEnv, pod, token, src string, deadline time.Time) (retry bool, err error) {
	dctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	retryable := func(err error) bool {
		code := status.Code(err)
		if code == codes.Unknown {
			code = status.Code(errors.Unwrap(err))
		}
		return code == codes.Unavailable || code == codes.ResourceExhausted
	}
	var dialOpts []grpc.DialOption
	if src != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		dialOpts = append(dialOpts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}))
	}
	c, err := adsc.Dial(dctx, adsc.Config{
		Address:     e.server.SecureGRPCAddr().String(),
		Node:        adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: e.ns, Labels: map[string]string{"istio": "ingressgateway"}}),
		TLS:         e.tlsConfig(nil),
		Token:       token,
		DialOptions: dialOpts,
	})
	if err != nil {
		return retryable(err), err
	}
	served := make(chan error, 1)
	go func() {
		served <- c.WaitFor(dctx, func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
	}()
	select {
	case err = <-served:
		if err == nil {
			e.t.Cleanup(func() { c.Close() })
			return false, nil
		}
		c.Close()
		return false, fmt.Errorf("not served in time: %w", err)
	case <-c.Done():
		err = c.Err()
		c.Close()
		return retryable(err), err
	}
}

// watchRenewals samples the Lease every 250 ms until ctx ends and returns
// the longest time between two renewals (by the renewTime it records, and
// at the end, since the last one).
func watchRenewals(ctx context.Context, e *secureEnv, ns string) time.Duration {
	leases := e.kube.CoordinationV1().Leases(ns)
	var last time.Time
	var gap time.Duration
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if l, err := leases.Get(context.Background(), leaseName, metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
			at := l.Spec.RenewTime.Time
			if !last.IsZero() && at.After(last) {
				gap = max(gap, at.Sub(last))
			}
			if at.After(last) {
				last = at
			}
		}
		select {
		case <-ctx.Done():
			if !last.IsZero() {
				gap = max(gap, time.Since(last))
			}
			return gap
		case <-t.C:
		}
	}
}

// junkFlood opens junk-token ADS streams and keeps them open until its
// context ends, as an attacker would to hold the server's work.
type junkFlood struct {
	opened atomic.Int64
	mu     sync.Mutex
	codes  map[codes.Code]int
	done   chan struct{}
}

func (f *junkFlood) wait() { <-f.done }

func (f *junkFlood) outcomes() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for c, n := range f.codes {
		out[c.String()] = n
	}
	return out
}

// startJunkFlood opens perSecond streams a second for d, spread over
// connections from sources (10 each: a connection carries at most 100
// streams at once).
func startJunkFlood(t *testing.T, ctx context.Context, e *secureEnv, sources []string, perSecond int, d time.Duration) *junkFlood {
	t.Helper()
	var conns []*grpc.ClientConn
	for _, src := range sources {
		for range 10 {
			dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
			cc, err := grpc.NewClient(e.server.SecureGRPCAddr().String(),
				grpc.WithTransportCredentials(credentials.NewTLS(e.tlsConfig(nil))),
				grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", addr) }))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cc.Close() })
			conns = append(conns, cc)
		}
	}
	f := &junkFlood{codes: map[codes.Code]int{}, done: make(chan struct{})}
	var streams sync.WaitGroup
	go func() {
		defer close(f.done)
		const tick = 10 * time.Millisecond
		perTick := perSecond * int(tick) / int(time.Second)
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		end := time.Now().Add(d)
		n := 0
		for time.Now().Before(end) {
			for range perTick {
				cc := conns[n%len(conns)]
				n++
				tok := junkToken()
				streams.Go(func() {
					s, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx, grpc.PerRPCCredentials(bearer(tok)))
					f.opened.Add(1)
					if err == nil {
						_, err = s.Recv()
					}
					f.mu.Lock()
					f.codes[status.Code(err)]++
					f.mu.Unlock()
				})
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(streams.Wait)
	return f
}

// junkToken is a new JWT-shaped token of a projected token's size
// (~1.3 KB), signed by nobody.
func junkToken() string {
	b := make([]byte, 1000)
	_, _ = rand.Read(b)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"RS256","kid":"junk"}`)) + "." + enc.EncodeToString(b[:700]) + "." + enc.EncodeToString(b[700:])
}

// apiServerTokenReviews is the number of TokenReviews the API server has
// answered (its own apiserver_request_total).
func apiServerTokenReviews(t *testing.T, e *secureEnv) int {
	t.Helper()
	raw, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Logf("API server metrics: %v", err)
		return 0
	}
	total := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="tokenreviews"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			total += int(v)
		}
	}
	return total
}

// Junk tokens on the debug port: one address is refused with 429 and
// Retry-After once past its burst, before any TokenReview, while an
// admin from another address is still served, and /metrics stays open.
func TestDebugJunkTokensRefusedBeforeReview(t *testing.T) {
	e := newSecureEnv(t)
	from := func(src string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	get := func(c *http.Client, path, token string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+e.server.HTTPAddr().String()+path, nil)
		e.must(err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		e.must(err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	flooder := from("127.0.0.2")
	got := map[int]int{}
	var retryAfter string
	for range 40 {
		resp := get(flooder, "/debug/adsz", junkToken())
		got[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			retryAfter = resp.Header.Get("Retry-After")
		}
	}
	t.Logf("40 junk debug tokens from one address: %v", got)
	if got[http.StatusTooManyRequests] < 20 || retryAfter == "" {
		t.Errorf("junk debug tokens from one address: %v (Retry-After %q), want most refused with 429 and Retry-After", got, retryAfter)
	}
	if resp := get(from("127.0.0.1"), "/debug/configz", debugAdminToken(t, e.wf)); resp.StatusCode != http.StatusOK {
		t.Errorf("an admin from another address during the flood: %d, want 200", resp.StatusCode)
	}
	if resp := get(flooder, "/metrics", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics from the flooding address: %d, want 200", resp.StatusCode)
	}
	if n := e.metric(`wayfinder_auth_admission_refused_total{limit="peer_rate",port="debug"}`); n < 20 {
		t.Errorf("debug peer_rate refusals counted %v, want at least 20", n)
	}
}

// A reconnect storm is not a flood: 300 gateways, each from its own
// address with its own new token (as after a restart of every replica,
// when no token is cached), all connecting at once, are all served within
// stormBound under the default limits, those refused for reviews in
// flight getting in on a retry.
func TestGatewayReconnectStormGetsThrough(t *testing.T) {
	const gateways, stormBound = 300, 20 * time.Second
	e := newSecureEnv(t)
	tokens := make([]string, gateways)
	for i := range tokens {
		tokens[i] = e.c.Token(t, e.ns, "gateway", []string{"wayfinder"}, time.Hour)
	}
	type result struct {
		took     time.Duration
		attempts int
		err      error
	}
	results := make([]result, gateways)
	var wg sync.WaitGroup
	for i := range gateways {
		wg.Go(func() {
			src := fmt.Sprintf("127.0.%d.%d", 2+i/250, 1+i%250)
			took, attempts, err := connectRetryingFrom(e, fmt.Sprintf("gw-%d", i), tokens[i], src, stormBound)
			results[i] = result{took, attempts, err}
		})
	}
	wg.Wait()
	var slowest time.Duration
	retried := 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("gateway %d: %v after %v (%d attempts)", i, r.err, r.took, r.attempts)
		}
		slowest = max(slowest, r.took)
		if r.attempts > 1 {
			retried++
		}
	}
	t.Logf("%d gateways with new tokens connecting at once: all served within %v, %d of them after a retry",
		gateways, slowest.Round(time.Millisecond), retried)
}
