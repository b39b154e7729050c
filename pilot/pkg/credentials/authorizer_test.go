package credentials

import (
	"context"
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
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// reviewer answers SubjectAccessReviews from a table of allowed
// "user|namespace/name" (get) and "user|namespace/" (list), and counts
// them; fail makes them error; gate, when set, holds each review until it
// is closed.
type reviewer struct {
	mu      sync.Mutex
	allowed map[string]bool
	fail    bool
	calls   int
	last    authorizationv1.SubjectAccessReviewSpec
	gate    chan struct{}
}

func (r *reviewer) setFail(fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = fail
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
		gate := r.gate
		r.mu.Unlock()
		if gate != nil {
			<-gate
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		r.last = sar.Spec
		if r.fail {
			return true, nil, errors.New("connection refused")
		}
		ra := sar.Spec.ResourceAttributes
		out := sar.DeepCopy()
		out.Status.Allowed = r.allowed[sar.Spec.User+"|"+ra.Namespace+"/"+ra.Name] && (ra.Verb == "get") == (ra.Name != "") && ra.Resource == "secrets"
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

// answer runs one round of reviews, as Run does, and reports whether it
// changed an answer.
func answer(a *Authorizer) bool { return a.round(context.Background()) }

// A question is never answered by waiting for the API server: the first
// ask is refused at once, even while the review hangs, and Run answers it
// in the background and calls OnChange, after which it is allowed.
func TestAnswersNeverWait(t *testing.T) {
	changed := make(chan struct{}, 4)
	a, r, _ := newAuthorizer(t, Options{OnChange: func() { changed <- struct{}{} }})
	r.set(gwUser+"|shop/shop-tls", true)
	gate := make(chan struct{})
	r.mu.Lock()
	r.gate = gate
	r.mu.Unlock()
	ctx, cancel := contextWithCancel()
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	ok, reason := a.CanGetSecret(gw, shop)
	if ok || !strings.Contains(reason, "not answered yet") {
		t.Fatalf("first ask: %v %q, want refused as pending", ok, reason)
	}
	// The review is under way and held; asking again still answers.
	poll.Until(t, "the review to be under way", func() bool { return len(gate) == 0 && r.count() == 0 },
		poll.Timeout(10*time.Second), poll.Interval(time.Millisecond))
	if ok, _ := a.CanGetSecret(gw, shop); ok {
		t.Fatal("allowed before the review answered")
	}
	close(gate)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnChange once the review answered")
	}
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Fatalf("after the review: refused %q", reason)
	}
	spec := r.last
	if spec.User != gwUser || !strings.Contains(strings.Join(spec.Groups, ","), "system:serviceaccounts,system:serviceaccounts:istio-system") ||
		spec.ResourceAttributes.Verb != "get" || spec.ResourceAttributes.Resource != "secrets" ||
		spec.ResourceAttributes.Namespace != "shop" || spec.ResourceAttributes.Name != "shop-tls" {
		t.Errorf("review asked %+v %+v", spec, spec.ResourceAttributes)
	}
}

// get and list are separate questions: list on a namespace (istiod's
// Authorize) says nothing of get on a Secret elsewhere, and answers are
// per ServiceAccount.
func TestAllowedAndDenied(t *testing.T) {
	a, r, _ := newAuthorizer(t, Options{})
	r.set(gwUser+"|shop/shop-tls", true)
	r.set(gwUser+"|istio-system/", true)
	other := model.SecretRef{Namespace: "shop", Name: "other"}
	tenant := model.Identity{Namespace: "tenant", ServiceAccount: "gateway"}
	a.CanGetSecret(gw, shop)
	a.CanGetSecret(gw, other)
	a.CanGetSecret(tenant, shop)
	a.CanListSecrets(gw, "istio-system")
	a.CanListSecrets(gw, "shop")
	if !answer(a) {
		t.Error("first answers reported no change")
	}
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Errorf("allowed Secret refused: %s", reason)
	}
	if ok, reason := a.CanGetSecret(gw, other); ok || !strings.Contains(reason, "RBAC does not allow get") || !strings.Contains(reason, "no RBAC policy matched") {
		t.Errorf("denied Secret: %v %q", ok, reason)
	}
	if ok, _ := a.CanGetSecret(tenant, shop); ok {
		t.Error("another ServiceAccount got the first one's answer")
	}
	if ok, reason := a.CanListSecrets(gw, "istio-system"); !ok {
		t.Errorf("list on its namespace refused: %s", reason)
	}
	if ok, reason := a.CanListSecrets(gw, "shop"); ok || !strings.Contains(reason, "list on the Secrets of namespace shop") {
		t.Errorf("list elsewhere: %v %q", ok, reason)
	}
	if n := r.count(); n != 5 {
		t.Errorf("%d reviews for five questions, want 5", n)
	}
}

// Answers are cached: asking again within the TTL asks the API server
// nothing; after it, the old answer is given while the review is made
// again, and the new one (a grant, a revocation) is reported as a change.
func TestCacheHitAndTTL(t *testing.T) {
	a, r, clk := newAuthorizer(t, Options{AllowedTTL: 5 * time.Minute, DeniedTTL: time.Minute})
	a.CanGetSecret(gw, shop)
	answer(a)
	for range 3 {
		if ok, _ := a.CanGetSecret(gw, shop); ok {
			t.Fatal("denied at first")
		}
	}
	if answer(a) || r.count() != 1 {
		t.Fatalf("%d reviews for questions within the TTL, want 1, and no change", r.count())
	}
	r.set(gwUser+"|shop/shop-tls", true)
	clk.Step(59 * time.Second)
	if answer(a); r.count() != 1 {
		t.Fatalf("within the denied TTL: %d reviews", r.count())
	}
	clk.Step(time.Second)
	if ok, _ := a.CanGetSecret(gw, shop); ok {
		t.Fatal("the grant was seen before a review")
	}
	if !answer(a) || r.count() != 2 {
		t.Fatalf("after the denied TTL: %d reviews, want 2 and a change", r.count())
	}
	if ok, _ := a.CanGetSecret(gw, shop); !ok {
		t.Fatal("granted access still refused")
	}
	r.set(gwUser+"|shop/shop-tls", false)
	clk.Step(4 * time.Minute)
	if answer(a); r.count() != 2 {
		t.Fatal("allowed answer re-checked within its TTL")
	}
	clk.Step(time.Minute)
	// Not asked again since: the config still rests on it, so Run
	// re-checks it on its own.
	if !answer(a) || r.count() != 3 {
		t.Fatalf("revocation: %d reviews, want 3 and a change", r.count())
	}
	if ok, _ := a.CanGetSecret(gw, shop); ok {
		t.Fatal("revoked access still allowed")
	}
}

// A first review that fails refuses (fail closed) and is retried; a
// failing review never makes the caller wait.
func TestFirstFailureRefusesAndIsRetried(t *testing.T) {
	a, r, clk := newAuthorizer(t, Options{ErrorRetry: 10 * time.Second})
	r.set(gwUser+"|shop/shop-tls", true)
	r.setFail(true)
	a.CanGetSecret(gw, shop)
	answer(a)
	if ok, reason := a.CanGetSecret(gw, shop); ok || !strings.Contains(reason, "SubjectAccessReview failed") {
		t.Fatalf("failed review: %v %q, want refused", ok, reason)
	}
	r.setFail(false)
	clk.Step(10 * time.Second)
	if !answer(a) {
		t.Fatal("the retry that answered reported no change")
	}
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Errorf("after the retry: refused %q", reason)
	}
}

// An allowed answer stands while the reviews re-checking it fail, but
// only for MaxStale after the review that last allowed it: then it is
// refused (fail closed) and the change is reported, so a grant revoked
// during an outage of the reviews does not last indefinitely. A denied
// answer stays denied; once reviews answer again the Secret is allowed
// again.
func TestOutageStalesAllowedAnswer(t *testing.T) {
	a, r, clk := newAuthorizer(t, Options{AllowedTTL: time.Minute, DeniedTTL: time.Minute, ErrorRetry: 10 * time.Second, MaxStale: 3 * time.Minute})
	r.set(gwUser+"|shop/shop-tls", true)
	denied := model.SecretRef{Namespace: "shop", Name: "other"}
	a.CanGetSecret(gw, shop)
	a.CanGetSecret(gw, denied)
	answer(a)
	r.setFail(true)
	for clk.Now().Before(t0.Add(3*time.Minute - 10*time.Second)) {
		clk.Step(10 * time.Second)
		if answer(a) {
			t.Fatalf("at %v, within MaxStale: a change reported", clk.Since(t0))
		}
		if ok, reason := a.CanGetSecret(gw, shop); !ok {
			t.Fatalf("at %v, within MaxStale: the allowed Secret was refused: %q", clk.Since(t0), reason)
		}
		if ok, _ := a.CanGetSecret(gw, denied); ok {
			t.Fatal("during the outage the denied Secret was allowed")
		}
	}
	calls := r.count()
	clk.Step(10 * time.Second)
	if !answer(a) {
		t.Fatal("the allowed answer went stale without a change reported")
	}
	if r.count() == calls {
		t.Error("no review retried during the outage")
	}
	if ok, reason := a.CanGetSecret(gw, shop); ok || !strings.Contains(reason, "maximum staleness") {
		t.Fatalf("past MaxStale: %v %q, want refused", ok, reason)
	}
	if ok, _ := a.CanGetSecret(gw, model.SecretRef{Namespace: "shop", Name: "new"}); ok {
		t.Error("a new question during the outage was allowed")
	}
	r.setFail(false)
	clk.Step(10 * time.Second)
	if !answer(a) {
		t.Fatal("reviews answering again reported no change")
	}
	if ok, reason := a.CanGetSecret(gw, shop); !ok {
		t.Errorf("after the outage: refused %q", reason)
	}
}

// The cache never holds more than MaxEntries answers.
func TestBoundedSize(t *testing.T) {
	a, _, clk := newAuthorizer(t, Options{MaxEntries: 3})
	for i := range 10 {
		clk.Step(time.Second)
		a.CanGetSecret(gw, model.SecretRef{Namespace: "shop", Name: string(rune('a' + i))})
		answer(a)
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
