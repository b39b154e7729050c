package kubeutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// apiServer is a stand-in API server on a fixed loopback address that can
// go away and come back: /readyz answers ready's value, anything else 200.
type apiServer struct {
	t     *testing.T
	addr  string
	srv   *http.Server
	ready atomic.Int32 // status code of /readyz
	hits  atomic.Int32 // requests other than /readyz
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{t: t}
	s.ready.Store(http.StatusOK)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.serve(l)
	return s
}

func (s *apiServer) serve(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(int(s.ready.Load()))
			return
		}
		s.hits.Add(1)
		_, _ = io.WriteString(w, "ok")
	})}
	s.srv = srv
	go func() { _ = srv.Serve(l) }()
	s.t.Cleanup(func() { srv.Close() })
}

func (s *apiServer) stop() { s.srv.Close() }

func (s *apiServer) start() {
	var l net.Listener
	// Polled: the port is released asynchronously.
	poll.Seen(s.t, "listening again on "+s.addr, func() (string, bool) {
		var err error
		l, err = net.Listen("tcp", s.addr)
		return fmt.Sprint(err), err == nil
	}, poll.Timeout(10*time.Second), poll.Interval(10*time.Millisecond))
	s.serve(l)
}

func client() *http.Client {
	wrap := WaitForAPIServer(ReconnectOptions{MinDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	return &http.Client{Transport: wrap(&http.Transport{DisableKeepAlives: true})}
}

func get(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// A watch sent while the API server is down waits and goes through once it
// is back and ready; it is not failed (which would cost the reflector a
// backoff).
func TestWatchWaitsForAPIServer(t *testing.T) {
	s := newAPIServer(t)
	c := client()
	s.stop()
	done := make(chan error, 1)
	go func() {
		resp, err := get(context.Background(), c, "http://"+s.addr+"/api/v1/services?watch=true&resourceVersion=5")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("watch returned while the API server was down: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	// Back but not ready: the watch still waits.
	s.ready.Store(http.StatusServiceUnavailable)
	s.start()
	select {
	case err := <-done:
		t.Fatalf("watch returned before the API server was ready: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if n := s.hits.Load(); n != 0 {
		t.Fatalf("%d requests reached an API server that was not ready", n)
	}
	s.ready.Store(http.StatusOK)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch after the API server came back: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch still waiting 10s after the API server was ready")
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("API server got %d requests, want 1", n)
	}
}

// Writes and plain gets fail at once, as before; a waiting watch ends with
// its context.
func TestOnlyListsAndWatchesWait(t *testing.T) {
	s := newAPIServer(t)
	c := client()
	s.stop()
	start := time.Now()
	resp, err := c.Post("http://"+s.addr+"/api/v1/namespaces/a/events", "application/json", nil)
	if err == nil {
		resp.Body.Close()
		t.Fatal("POST to a stopped API server succeeded")
	}
	if _, err := get(context.Background(), c, "http://"+s.addr+"/api/v1/namespaces/a/secrets/b"); err == nil {
		t.Fatal("GET of one object from a stopped API server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("requests that must fail fast took %v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = get(ctx, c, "http://"+s.addr+"/api/v1/services?resourceVersion=0")
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("list with an ended context: err %v, ctx %v", err, ctx.Err())
	}
}

func TestIsListOrWatch(t *testing.T) {
	for url, want := range map[string]bool{
		"http://x/api/v1/pods?watch=true":                    true,
		"http://x/api/v1/pods?resourceVersion=0&limit=500":   true,
		"http://x/api/v1/pods?resourceVersion=":              true,
		"http://x/api/v1/namespaces/a/pods/b":                false,
		"http://x/apis/coordination.k8s.io/v1/leases?foo=ba": false,
	} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if got := isListOrWatch(req); got != want {
			t.Errorf("isListOrWatch(%s) = %v, want %v", url, got, want)
		}
	}
}
