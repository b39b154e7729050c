package security

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// junk is a JWT-shaped token nobody issued: it costs a TokenReview unless
// admission refuses it first.
func junk(i int) string { return jwt(time.Unix(1_900_000_000, 0), fmt.Sprintf("junk-%d", i)) }

func refusedBy(err error) string {
	var o *OverloadError
	if errors.As(err, &o) {
		return o.Limit
	}
	return ""
}

// New tokens from one address are refused past its burst and rate, before
// any TokenReview, while another address is still admitted; a token
// answered before costs nothing and passes whatever the limits; the
// refusals are counted by port and limit.
func TestAdmissionPerPeerAndServerRate(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	good := jwt(clk.Now().Add(time.Hour), "good")
	r := &reviewer{users: map[string]string{good: "system:serviceaccount:tenant:gateway"}}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk})
	reg := prometheus.NewRegistry()
	m := NewAdmissionMetrics(reg)
	adm := NewAdmission(PortXDS, AdmissionOptions{Rate: 10, Burst: 6, PeerRate: 1, PeerBurst: 3, MaxInFlight: 100}, m, nil, clk)
	ctx := context.Background()
	const flooder, gateway = "10.0.0.66:40000", "10.0.0.7:51000"

	// The gateway's token, reviewed once and cached.
	if _, err := a.Authenticate(ctx, good, nil, adm.Gate(gateway)); err != nil {
		t.Fatal(err)
	}
	// The flooder: 3 reviews (its burst), then refused at once.
	for i := range 10 {
		_, err := a.Authenticate(ctx, junk(i), nil, adm.Gate(flooder))
		if i < 3 && !errors.Is(err, ErrTokenRefused) {
			t.Errorf("junk %d within the peer burst: %v, want reviewed and refused", i, err)
		}
		if i >= 3 && refusedBy(err) != LimitPeerRate {
			t.Errorf("junk %d past the peer burst: %v, want peer_rate", i, err)
		}
	}
	if n := r.calls.Load(); n != 4 {
		t.Errorf("%d TokenReviews, want 4 (the gateway's and the flooder's burst)", n)
	}
	// Another address still gets the server's budget: 6 in all, 4 used.
	for i := range 2 {
		if _, err := a.Authenticate(ctx, junk(100+i), nil, adm.Gate(fmt.Sprintf("10.0.1.%d:1", i))); !errors.Is(err, ErrTokenRefused) {
			t.Errorf("new address %d: %v, want reviewed", i, err)
		}
	}
	if _, err := a.Authenticate(ctx, junk(200), nil, adm.Gate("10.0.2.1:1")); refusedBy(err) != LimitServerRate {
		t.Errorf("past the server burst: %v, want server_rate", err)
	}
	// A cached answer passes whatever the limits.
	for range 20 {
		if _, err := a.Authenticate(ctx, good, nil, adm.Gate(flooder)); err != nil {
			t.Fatalf("cached token refused: %v", err)
		}
	}
	// Time refills both: a second later the flooder has one more.
	clk.SetTime(clk.Now().Add(time.Second))
	if _, err := a.Authenticate(ctx, junk(300), nil, adm.Gate(flooder)); !errors.Is(err, ErrTokenRefused) {
		t.Errorf("a second later: %v, want reviewed", err)
	}
	if _, err := a.Authenticate(ctx, junk(301), nil, adm.Gate(flooder)); refusedBy(err) != LimitPeerRate {
		t.Errorf("a second later, twice: %v, want peer_rate", err)
	}
	const refused = "wayfinder_auth_admission_refused_total"
	if adm.InFlight() != 0 {
		t.Errorf("%d reviews still counted in flight after their answers", adm.InFlight())
	}
	if got := sample(t, reg, refused, map[string]string{"port": PortXDS, "limit": LimitPeerRate}); got != 8 {
		t.Errorf("refused{xds,peer_rate} = %v, want 8", got)
	}
	if got := sample(t, reg, refused, map[string]string{"port": PortXDS, "limit": LimitServerRate}); got != 1 {
		t.Errorf("refused{xds,server_rate} = %v, want 1", got)
	}
	if n := series(t, reg, refused); n != 6 {
		t.Errorf("admission series = %d, want 6: every port and limit, nothing else", n)
	}
}

// Reviews waiting for the API server are capped: one more is refused at
// once, and admitted again when one is answered.
func TestAdmissionCapsReviewsInFlight(t *testing.T) {
	reg := prometheus.NewRegistry()
	adm := NewAdmission(PortXDS, AdmissionOptions{Rate: -1, PeerRate: -1, MaxInFlight: 2}, NewAdmissionMetrics(reg), nil, nil)
	var releases []func()
	for i := range 2 {
		release, err := adm.Gate(fmt.Sprintf("10.0.0.%d:1", i))()
		if err != nil {
			t.Fatalf("review %d: %v", i, err)
		}
		releases = append(releases, release)
	}
	if _, err := adm.Gate("10.0.0.9:1")(); refusedBy(err) != LimitInFlight {
		t.Errorf("third review while two wait: %v, want in_flight", err)
	}
	if got := sample(t, reg, "wayfinder_auth_reviews_in_flight", map[string]string{"port": PortXDS}); got != 2 {
		t.Errorf("reviews in flight = %v, want 2", got)
	}
	releases[0]()
	releases[0]() // twice: counted once
	release, err := adm.Gate("10.0.0.9:1")()
	if err != nil {
		t.Fatalf("after one answer: %v, want admitted", err)
	}
	release()
	releases[1]()
	if adm.InFlight() != 0 {
		t.Errorf("in flight after every answer = %d, want 0", adm.InFlight())
	}
	if got := sample(t, reg, "wayfinder_auth_admission_refused_total", map[string]string{"port": PortXDS, "limit": LimitInFlight}); got != 1 {
		t.Errorf("refused{xds,in_flight} = %v, want 1", got)
	}
}

// The per-address table stays bounded under a flood of addresses.
func TestAdmissionPeerTableBounded(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	adm := NewAdmission(PortXDS, AdmissionOptions{Rate: -1, PeerRate: 1, PeerBurst: 1, MaxInFlight: -1, MaxPeers: 16}, nil, nil, clk)
	for i := range 1000 {
		release, err := adm.Gate(fmt.Sprintf("10.%d.%d.%d:1", i/65536, i/256%256, i%256))()
		if err != nil {
			t.Fatalf("address %d: %v", i, err)
		}
		release()
	}
	if n := len(adm.peers); n > 16 {
		t.Errorf("%d addresses remembered, bound 16", n)
	}
}

// The secure port's interceptor turns admission refusals into codes
// Envoy retries: ResourceExhausted for the address's own limit,
// Unavailable for the server's.
func TestStreamAuthenticatorAdmissionCodes(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	r := &reviewer{users: map[string]string{}}
	auth := &StreamAuthenticator{
		Tokens:    NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk}),
		Admission: NewAdmission(PortXDS, AdmissionOptions{Rate: 1, Burst: 2, PeerRate: 1, PeerBurst: 1, MaxInFlight: 10}, nil, nil, clk),
	}
	call := func(addr string, i int) error {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(addr), Port: 1234}})
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+junk(i)))
		_, err := auth.authenticate(ctx)
		return err
	}
	if c := status.Code(call("10.0.0.1", 1)); c != codes.Unauthenticated {
		t.Errorf("first junk token: %v, want Unauthenticated (reviewed)", c)
	}
	if c := status.Code(call("10.0.0.1", 2)); c != codes.ResourceExhausted {
		t.Errorf("second from the same address: %v, want ResourceExhausted", c)
	}
	_ = call("10.0.0.2", 3)
	if c := status.Code(call("10.0.0.3", 4)); c != codes.Unavailable {
		t.Errorf("past the server's burst: %v, want Unavailable", c)
	}
	if n := r.calls.Load(); n != 2 {
		t.Errorf("%d TokenReviews, want 2", n)
	}
	// A too-long token never reaches admission or review.
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+jwt(time.Now(), string(make([]byte, 10_000)))))
	if _, err := auth.authenticate(ctx); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a 10 KB token: %v, want Unauthenticated", err)
	}
}

// Debug: named ServiceAccounts are admins besides the admin namespaces; an
// address over its limit gets 429 with Retry-After, the server over its
// own 503.
func TestDebugAuthAdminsAndAdmission(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	exp := clk.Now().Add(time.Hour)
	named, ownNS, other := jwt(exp, "named"), jwt(exp, "own"), jwt(exp, "other")
	r := &reviewer{users: map[string]string{
		named: "system:serviceaccount:ops:oncall", ownNS: "system:serviceaccount:wayfinder:any", other: "system:serviceaccount:ops:app",
	}}
	d := &DebugAuth{
		Tokens:          NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk}),
		AdminNamespaces: []string{"wayfinder"}, AdminServiceAccounts: []string{"ops/oncall"},
		Admission: NewAdmission(PortDebug, AdmissionOptions{Rate: 1, Burst: 4, PeerRate: 1, PeerBurst: 3}, nil, nil, clk),
	}
	req := func(token, addr string) *http.Request {
		rq := httptest.NewRequest(http.MethodGet, "/debug/adsz", nil)
		rq.RemoteAddr = addr
		rq.Header.Set("Authorization", "Bearer "+token)
		return rq
	}
	for tok, admin := range map[string]bool{named: true, ownNS: true, other: false} {
		v, err := d.Viewer(req(tok, "10.0.0.1:1"))
		if err != nil {
			t.Fatal(err)
		}
		if v.Admin != admin {
			t.Errorf("%s: admin %v, want %v", v.Identity, v.Admin, admin)
		}
	}
	_, err := d.Viewer(req(junk(1), "10.0.0.1:1"))
	var ae *DebugAuthError
	if !errors.As(err, &ae) || ae.Code != http.StatusTooManyRequests || ae.RetryAfter <= 0 {
		t.Errorf("past the address's burst: %v, want 429 with Retry-After", err)
	}
	_, _ = d.Viewer(req(junk(2), "10.0.0.2:1"))
	if _, err := d.Viewer(req(junk(3), "10.0.0.3:1")); !errors.As(err, &ae) || ae.Code != http.StatusServiceUnavailable {
		t.Errorf("past the server's burst: %v, want 503", err)
	}
}
