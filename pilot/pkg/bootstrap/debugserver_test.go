package bootstrap

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Debug admins default to Wayfinder's own namespace only; named
// ServiceAccounts must be NAMESPACE/NAME.
func TestDebugAdminDefaults(t *testing.T) {
	var o SecurityOptions
	o.applyDefaults("wayfinder-system")
	if !slices.Equal(o.DebugAdminNamespaces, []string{"wayfinder-system"}) {
		t.Errorf("default debug admin namespaces %v, want only the pod's namespace", o.DebugAdminNamespaces)
	}
	o = SecurityOptions{}
	o.applyDefaults("")
	if len(o.DebugAdminNamespaces) != 0 {
		t.Errorf("without a pod namespace, debug admin namespaces %v, want none", o.DebugAdminNamespaces)
	}
	o = SecurityOptions{DebugAdminNamespaces: []string{"ops"}}
	o.applyDefaults("wayfinder-system")
	if !slices.Equal(o.DebugAdminNamespaces, []string{"ops"}) {
		t.Errorf("explicit debug admin namespaces became %v", o.DebugAdminNamespaces)
	}
	for sa, ok := range map[string]bool{"ops/oncall": true, "ops": false, "/x": false, "ops/": false, "a/b/c": false} {
		o := SecurityOptions{DebugAdminServiceAccounts: []string{sa}}
		if err := o.validate(true); (err == nil) != ok {
			t.Errorf("--debug-admin-service-accounts %q: %v, want ok=%v", sa, err, ok)
		}
	}
}

// startFileServer runs a file-mode server on loopback until the test ends.
func startFileServer(t *testing.T, sec SecurityOptions) *Server {
	t.Helper()
	s, err := NewServer(Options{ConfigDir: t.TempDir(), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

// The debug server has header, read and idle timeouts and a bound on a
// request's headers, and closes connections past its per-address cap;
// pprof's profile, which answers after the seconds asked for, longer than
// the read timeout, and /metrics still work.
func TestDebugServerBounds(t *testing.T) {
	s := startFileServer(t, SecurityOptions{DebugServer: DebugServerOptions{
		ReadHeaderTimeout: time.Second, ReadTimeout: 300 * time.Millisecond, MaxConnectionsPerPeer: 3,
	}})
	h := s.http
	if h.ReadHeaderTimeout != time.Second || h.ReadTimeout != 300*time.Millisecond ||
		h.IdleTimeout != DefaultDebugServer.IdleTimeout || h.MaxHeaderBytes != DefaultDebugServer.MaxHeaderBytes || h.WriteTimeout != 0 {
		t.Errorf("debug server timeouts %v/%v/%v, max header bytes %d, write timeout %v",
			h.ReadHeaderTimeout, h.ReadTimeout, h.IdleTimeout, h.MaxHeaderBytes, h.WriteTimeout)
	}
	base := "http://" + s.HTTPAddr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	start := time.Now()
	if code, body := get("/debug/pprof/profile?seconds=1"); code != http.StatusOK || len(body) == 0 {
		t.Errorf("pprof profile: %d, %d bytes", code, len(body))
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("pprof profile answered after %v, before the second it was asked for", took)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "wayfinder_http_connections_refused_total") {
		t.Errorf("/metrics: %d, without the connection refusals", code)
	}

	// Three idle connections from this address are held; a fourth is
	// closed at once; the idle ones go after the header timeout.
	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", s.HTTPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// Accepted in order: the fourth after the three.
	fourth, err := net.Dial("tcp", s.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer fourth.Close()
	_ = fourth.SetReadDeadline(time.Now().Add(900 * time.Millisecond))
	if _, err := fourth.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("a fourth connection from one address: %v, want closed at once", err)
	}
	for i, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("idle connection %d: %v, want closed after the header timeout", i, err)
		}
	}
	if code, _ := get("/healthz/ready"); code == 0 {
		t.Error("the server stopped answering")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// The review client has its own rate limiter and a deadline per request:
// with the main client's limiter spent, a review still starts at once, and
// an API server that never answers costs it Timeout, not forever.
func TestReviewClientOwnLimiterAndDeadline(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "tokenreviews") {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"x"}}`)
	}))
	defer srv.Close()
	defer close(hang)
	cfg := &rest.Config{Host: srv.URL, QPS: 0.01, Burst: 1}
	main, err := kclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Spend the main client's only token.
	if _, err := main.Kube.CoordinationV1().Leases("ns").Get(context.Background(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	reviews, err := newReviewClient(cfg, ReviewClientOptions{QPS: 100, Burst: 200, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = reviews.AuthenticationV1().TokenReviews().Create(context.Background(), &authnv1.TokenReview{}, metav1.CreateOptions{})
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Errorf("a review the API server never answers: %v after %v, want an error after about 300ms", err, took)
	}
}
