package credentials

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// reviewer answers SubjectAccessReviews from a table of allowed
// "user|namespace/name" and counts them; fail makes them error.
type reviewer struct {
	mu      sync.Mutex
	allowed map[string]bool
	fail    bool
	calls   int
	last    authorizationv1.SubjectAccessReviewSpec
}

func (r *reviewer) set(allowed string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allowed[allowed] = ok
}

func (r *reviewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func newAuthorizer(t *testing.T, opts Options) (*Authorizer, *reviewer, *clocktesting.FakeClock) {
	t.Helper()
	r := &reviewer{allowed: map[string]bool{}}
	cs := fake.NewClientset()
	cs.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		r.last = sar.Spec
		if r.fail {
			return true, nil, errors.New("connection refused")
		}
		ra := sar.Spec.ResourceAttributes
		out := sar.DeepCopy()
		out.Status.Allowed = r.allowed[sar.Spec.User+"|"+ra.Namespace+"/"+ra.Name] && ra.Verb == "get" && ra.Resource == "secrets"
		if !out.Status.Allowed {
			out.Status.Reason = "no RBAC policy matched"
		}
		return true, out, nil
	})
	clk := clocktesting.NewFakeClock(t0)
	opts.Client = cs.AuthorizationV1().SubjectAccessReviews()
	opts.Clock = clk
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, r, clk
}

var (
	gw     = model.Identity{Namespace: "istio-system", ServiceAccount: "gateway", Method: model.MethodToken}
	shop   = model.SecretRef{Namespace: "shop", Name: "shop-tls"}
	gwUser = "system:serviceaccount:istio-system:gateway"
)

func TestAllowedAndDenied(t *testing.T) {
	a, r, _ := newAuthorizer(t, Options{})
	r.set(gwUser+"|shop/shop-tls", true)
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Fatalf("allowed Secret refused: %s", reason)
	}
	spec := r.last
	if spec.User != gwUser || !strings.Contains(strings.Join(spec.Groups, ","), "system:serviceaccounts,system:serviceaccounts:istio-system") ||
		spec.ResourceAttributes.Verb != "get" || spec.ResourceAttributes.Resource != "secrets" ||
		spec.ResourceAttributes.Namespace != "shop" || spec.ResourceAttributes.Name != "shop-tls" {
		t.Errorf("review asked %+v %+v", spec, spec.ResourceAttributes)
	}
	other := model.SecretRef{Namespace: "shop", Name: "other"}
	ok, reason := a.CanGetSecret(gw, other)
	if ok || !strings.Contains(reason, "RBAC does not allow get") || !strings.Contains(reason, "no RBAC policy matched") {
		t.Errorf("denied Secret: %v %q", ok, reason)
	}
	tenant := model.Identity{Namespace: "tenant", ServiceAccount: "gateway"}
	if ok, _ := a.CanGetSecret(tenant, shop); ok {
		t.Error("another ServiceAccount got the first one's answer")
	}
}

// Answers are cached: asking again within the TTL asks the API server
// nothing; after it, the review is made again and sees RBAC changes.
func TestCacheHitAndTTL(t *testing.T) {
	a, r, clk := newAuthorizer(t, Options{AllowedTTL: 5 * time.Minute, DeniedTTL: time.Minute})
	for range 3 {
		if ok, _ := a.CanGetSecret(gw, shop); ok {
			t.Fatal("denied at first")
		}
	}
	if n := r.count(); n != 1 {
		t.Fatalf("%d reviews for three questions within the TTL, want 1", n)
	}
	r.set(gwUser+"|shop/shop-tls", true)
	clk.Step(59 * time.Second)
	if ok, _ := a.CanGetSecret(gw, shop); ok || r.count() != 1 {
		t.Fatalf("within the denied TTL: allowed %v after %d reviews", ok, r.count())
	}
	clk.Step(time.Second)
	if ok, _ := a.CanGetSecret(gw, shop); !ok || r.count() != 2 {
		t.Fatalf("after the denied TTL: allowed %v after %d reviews, want allowed after 2", ok, r.count())
	}
	r.set(gwUser+"|shop/shop-tls", false)
	clk.Step(4 * time.Minute)
	if ok, _ := a.CanGetSecret(gw, shop); !ok {
		t.Fatal("allowed answer dropped within its TTL")
	}
	clk.Step(time.Minute)
	if ok, _ := a.CanGetSecret(gw, shop); ok || r.count() != 3 {
		t.Fatalf("revoked access still allowed after the allowed TTL (%d reviews)", r.count())
	}
}

// A review that fails refuses the Secret, does not make every other
// question wait on the API server, and is retried: Run asks again after
// ErrorRetry and calls OnChange when the answer turns.
func TestErrorFailsClosedAndIsRetried(t *testing.T) {
	changed := make(chan struct{}, 1)
	a, r, clk := newAuthorizer(t, Options{ErrorRetry: 10 * time.Second, OnChange: func() { changed <- struct{}{} }})
	r.set(gwUser+"|shop/shop-tls", true)
	r.fail = true
	ok, reason := a.CanGetSecret(gw, shop)
	if ok || !strings.Contains(reason, "SubjectAccessReview failed") {
		t.Fatalf("failed review: %v %q, want refused", ok, reason)
	}
	other := model.SecretRef{Namespace: "shop", Name: "b"}
	if ok, reason := a.CanGetSecret(gw, other); ok || r.count() != 1 || !strings.Contains(reason, "did not answer a recent SubjectAccessReview") {
		t.Fatalf("second question during the outage: %v %q after %d reviews, want refused at once", ok, reason, r.count())
	}
	r.mu.Lock()
	r.fail = false
	r.mu.Unlock()

	ctx, cancel := contextWithCancel()
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, clk.HasWaiters)
	clk.Step(10 * time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnChange after the retry succeeded")
	}
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Errorf("after the retry: refused %q", reason)
	}
}

// The cache never holds more than MaxEntries answers.
func TestBoundedSize(t *testing.T) {
	a, _, clk := newAuthorizer(t, Options{MaxEntries: 3})
	for i := range 10 {
		clk.Step(time.Second)
		a.CanGetSecret(gw, model.SecretRef{Namespace: "shop", Name: string(rune('a' + i))})
		if n := a.Len(); n > 3 {
			t.Fatalf("%d answers cached, max 3", n)
		}
	}
	if a.Len() != 3 {
		t.Errorf("cache holds %d, want 3", a.Len())
	}
}

func TestNeedsClient(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without a client succeeded")
	}
}

// An answer that expires while the API server does not answer stands until
// a review succeeds: an outage does not take a Secret away from the
// gateways serving it, and nothing changes for them (no OnChange).
func TestOutageKeepsLastAnswer(t *testing.T) {
	changed := make(chan struct{}, 4)
	a, r, clk := newAuthorizer(t, Options{AllowedTTL: time.Minute, DeniedTTL: time.Minute, ErrorRetry: 10 * time.Second,
		OnChange: func() { changed <- struct{}{} }})
	r.set(gwUser+"|shop/shop-tls", true)
	denied := model.SecretRef{Namespace: "shop", Name: "other"}
	if ok, _ := a.CanGetSecret(gw, shop); !ok {
		t.Fatal("allowed Secret refused")
	}
	if ok, _ := a.CanGetSecret(gw, denied); ok {
		t.Fatal("denied Secret allowed")
	}
	r.mu.Lock()
	r.fail = true
	r.mu.Unlock()

	ctx, cancel := contextWithCancel()
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// Both answers expire during the outage; Run's re-checks fail.
	for range 9 {
		waitUntil(t, clk.HasWaiters)
		calls := r.count()
		clk.Step(10 * time.Second)
		if clk.Now().After(t0.Add(time.Minute)) {
			waitUntil(t, func() bool { return r.count() > calls })
		}
	}
	if r.count() < 4 {
		t.Fatalf("%d reviews, want the expired answers re-checked during the outage", r.count())
	}
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Errorf("during the outage the allowed Secret was refused: %q", reason)
	}
	if ok, _ := a.CanGetSecret(gw, denied); ok {
		t.Error("during the outage the denied Secret was allowed")
	}
	// A question never answered before still fails closed.
	if ok, _ := a.CanGetSecret(gw, model.SecretRef{Namespace: "shop", Name: "new"}); ok {
		t.Error("a new question during the outage was allowed")
	}
	select {
	case <-changed:
		t.Error("OnChange during the outage: the gateways' config would be pushed without the Secret")
	default:
	}

	// Once reviews answer again, a revocation made meanwhile applies.
	r.mu.Lock()
	r.fail = false
	r.mu.Unlock()
	r.set(gwUser+"|shop/shop-tls", false)
	waitUntil(t, clk.HasWaiters)
	clk.Step(10 * time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnChange after the revocation was seen")
	}
	if ok, _ := a.CanGetSecret(gw, shop); ok {
		t.Error("revoked Secret still allowed after the outage")
	}
}
