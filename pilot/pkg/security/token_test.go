package security

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// reviewer is a fake API server answering TokenReviews from a table of
// token -> user name (and audiences it is valid for) and counting calls.
type reviewer struct {
	users     map[string]string
	audiences map[string][]string
	down      atomic.Bool
	calls     atomic.Int32
}

func (r *reviewer) client() kclient.Kube {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.calls.Add(1)
		if r.down.Load() {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		user, ok := r.users[tr.Spec.Token]
		if !ok {
			tr.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
			return true, tr, nil
		}
		var matched []string
		for _, want := range tr.Spec.Audiences {
			for _, has := range r.audiences[tr.Spec.Token] {
				if want == has {
					matched = append(matched, want)
				}
			}
		}
		if len(tr.Spec.Audiences) > 0 && len(matched) == 0 {
			tr.Status = authnv1.TokenReviewStatus{Error: "token audiences is invalid for the target audiences"}
			return true, tr, nil
		}
		tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: matched, User: authnv1.UserInfo{Username: user}}
		return true, tr, nil
	})
	return kclienttest.Kube(c)
}

// jwt builds a token whose payload has exp; the signature is not checked
// here (the fake API server vouches for it).
func jwt(exp time.Time, salt string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." +
		enc.EncodeToString(fmt.Appendf(nil, `{"exp":%d,"sub":%q}`, exp.Unix(), salt)) + ".c2ln"
}

func TestTokenAuthenticatorIdentityAndCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	good := jwt(clk.Now().Add(3*time.Minute), "good")
	person := jwt(clk.Now().Add(time.Hour), "person")
	r := &reviewer{
		users:     map[string]string{good: "system:serviceaccount:tenant:gateway", person: "alice"},
		audiences: map[string][]string{good: {"wayfinder"}, person: {"wayfinder"}},
	}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk})
	ctx := context.Background()
	aud := []string{"wayfinder", "istio-ca"}

	id, err := a.Authenticate(ctx, good, aud, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id.Namespace != "tenant" || id.ServiceAccount != "gateway" || id.Method != "token" {
		t.Fatalf("identity = %+v, want tenant/gateway by token", id)
	}
	for range 5 {
		if _, err := a.Authenticate(ctx, good, aud, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("TokenReviews = %d for six checks of one token, want 1 (cached)", n)
	}
	// Cached until the token's exp (here before the cache TTL), and not a
	// moment longer.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if _, err := a.Authenticate(ctx, good, aud, nil); err != nil || r.calls.Load() != 1 {
		t.Errorf("before exp: err %v, reviews %d, want cached", err, r.calls.Load())
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if _, err := a.Authenticate(ctx, good, aud, nil); err != nil || r.calls.Load() != 2 {
		t.Errorf("after exp: err %v, reviews %d, want a new review", err, r.calls.Load())
	}

	// A different audience set is a different question.
	if _, err := a.Authenticate(ctx, good, []string{"other"}, nil); !errors.Is(err, ErrTokenRefused) {
		t.Errorf("token for audience wayfinder accepted for audience other: %v", err)
	}
	// Not a ServiceAccount.
	if _, err := a.Authenticate(ctx, person, aud, nil); !errors.Is(err, ErrTokenRefused) {
		t.Errorf("a person's token accepted: %v", err)
	}
}

func TestTokenAuthenticatorNegativeCacheAndOutage(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	r := &reviewer{users: map[string]string{}}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk, NegativeTTL: 10 * time.Second})
	ctx := context.Background()
	bad, other := jwt(clk.Now().Add(time.Hour), "bad"), jwt(clk.Now().Add(time.Hour), "other")
	for range 3 {
		if _, err := a.Authenticate(ctx, bad, nil, nil); !errors.Is(err, ErrTokenRefused) {
			t.Fatalf("bad token: %v", err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("reviews = %d, want 1: a refusal is cached briefly", n)
	}
	clk.SetTime(clk.Now().Add(11 * time.Second))
	_, _ = a.Authenticate(ctx, bad, nil, nil)
	if n := r.calls.Load(); n != 2 {
		t.Errorf("reviews = %d after the negative TTL, want 2", n)
	}

	// An API server outage is not the token's fault: not cached, not
	// ErrTokenRefused.
	r.down.Store(true)
	for range 2 {
		if _, err := a.Authenticate(ctx, other, nil, nil); err == nil || errors.Is(err, ErrTokenRefused) {
			t.Fatalf("outage: %v, want an error that is not a refusal", err)
		}
	}
	if n := r.calls.Load(); n != 4 {
		t.Errorf("reviews = %d, want every check during an outage to ask again", n)
	}
}

func TestTokenCacheIsBounded(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	users := map[string]string{}
	for i := range 50 {
		users[jwt(clk.Now().Add(time.Duration(i+1)*time.Minute), fmt.Sprint(i))] = "system:serviceaccount:ns:sa"
	}
	r := &reviewer{users: users}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk, CacheSize: 8})
	for tok := range users {
		if _, err := a.Authenticate(context.Background(), tok, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.cache.len(); n > 8 {
		t.Errorf("cache holds %d entries, bound is 8", n)
	}
}

// An accepted token is trusted for the cache TTL, not until its exp: an
// automounted token is valid for a year, and a deleted ServiceAccount must
// stop working within minutes.
func TestTokenAuthenticatorPositiveTTL(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	yearLong := jwt(clk.Now().Add(365*24*time.Hour), "automounted")
	r := &reviewer{users: map[string]string{yearLong: "system:serviceaccount:tenant:gateway"}}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client(), Clock: clk})
	check := func(when string, wantCalls int32) {
		t.Helper()
		if _, err := a.Authenticate(context.Background(), yearLong, nil, nil); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if n := r.calls.Load(); n != wantCalls {
			t.Errorf("%s: %d TokenReviews, want %d", when, n, wantCalls)
		}
	}
	check("first", 1)
	clk.SetTime(clk.Now().Add(DefaultPositiveCacheTTL - time.Second))
	check("within the cache TTL", 1)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	check("past the cache TTL", 2)

	// The API server stops accepting it (ServiceAccount deleted): refused
	// once the cached answer has aged out.
	delete(r.users, yearLong)
	clk.SetTime(clk.Now().Add(DefaultPositiveCacheTTL + time.Second))
	if _, err := a.Authenticate(context.Background(), yearLong, nil, nil); !errors.Is(err, ErrTokenRefused) {
		t.Errorf("a token the API server no longer accepts, after the cache TTL: %v, want refused", err)
	}
}

// What cannot be a ServiceAccount token is refused without a TokenReview
// and without asking admission: too long, or not a JWT.
func TestTokenAuthenticatorRefusesJunkWithoutReview(t *testing.T) {
	r := &reviewer{users: map[string]string{}}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client(), MaxTokenBytes: 4096})
	gateCalls := 0
	gate := Gate(func() (func(), error) { gateCalls++; return func() {}, nil })
	long := jwt(time.Now().Add(time.Hour), strings.Repeat("x", 4096))
	for _, tok := range []string{long, "opaque-random-bytes", "a.b", "a.b.c.d", "e30.e30.c2ln", "!!!.e30.c2ln",
		base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256"}`)) + ".e30=.c2ln"} {
		_, err := a.Authenticate(context.Background(), tok, nil, gate)
		if !errors.Is(err, ErrTokenRefused) {
			t.Errorf("token %.20q...: %v, want refused", tok, err)
		}
	}
	if n := r.calls.Load(); n != 0 || gateCalls != 0 {
		t.Errorf("%d TokenReviews and %d admissions for tokens that cannot be ServiceAccount tokens, want none", n, gateCalls)
	}
	if _, err := a.Authenticate(context.Background(), long, nil, nil); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Errorf("a too-long token's error %v does not name the bound", err)
	}
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer ": "", "abc": ""} {
		got, ok := BearerToken(in)
		if got != want || ok != (want != "") {
			t.Errorf("BearerToken(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// BenchmarkTokenAuthenticateCached is the cost of authenticating a stream
// whose token was reviewed before: a hash and a map lookup, no API call.
func BenchmarkTokenAuthenticateCached(b *testing.B) {
	tok := jwt(time.Now().Add(time.Hour), "bench")
	r := &reviewer{users: map[string]string{tok: "system:serviceaccount:ns:sa"}, audiences: map[string][]string{tok: {"wayfinder"}}}
	a := NewTokenAuthenticator(TokenOptions{Client: r.client()})
	aud := []string{"wayfinder", "istio-ca"}
	if _, err := a.Authenticate(context.Background(), tok, aud, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(context.Background(), tok, aud, nil); err != nil {
			b.Fatal(err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		b.Fatalf("%d TokenReviews, want 1", n)
	}
}
