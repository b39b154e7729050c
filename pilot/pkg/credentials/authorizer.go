// Package credentials decides which gateway may read which Kubernetes
// Secret: a model.SecretAuthorizer that asks the API server with a
// SubjectAccessReview whether a ServiceAccount may get a Secret, and
// caches the answers for a bounded time in a bounded cache.
package credentials

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Options configure an Authorizer. Zero durations and sizes take the
// defaults given.
type Options struct {
	// Client creates SubjectAccessReviews. Required.
	Client kclient.Creator[*authorizationv1.SubjectAccessReview]
	// AllowedTTL is how long an allowed answer is kept (default 5m, as
	// istiod), DeniedTTL a denied one (default 1m): a Role granted later
	// takes effect within it. ErrorRetry is how soon a failed review is
	// tried again (default 10s); until then the Secret is refused, unless
	// an earlier review answered: that answer stands while reviews fail.
	AllowedTTL, DeniedTTL, ErrorRetry time.Duration
	// Timeout bounds one review (default 5s).
	Timeout time.Duration
	// MaxEntries bounds the cache (default 10,000 answers); when full, the
	// answer expiring soonest is dropped.
	MaxEntries int
	// OnChange is called, from the refresh loop (Run), when an answer
	// re-checked after it expired or failed differs from the one given
	// before, so that the proxies' config is pushed again.
	OnChange func()
	// Clock defaults to the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Authorizer is the Kubernetes model.SecretAuthorizer. Safe for
// concurrent use.
type Authorizer struct {
	opts Options
	mu   sync.Mutex
	// cache holds one answer per ServiceAccount and Secret.
	cache map[key]*entry
	// failedAt is when a review last failed: until ErrorRetry after it,
	// new questions are refused at once rather than each waiting for an
	// API server that is not answering.
	failedAt time.Time
	// failing is whether the last review failed.
	failing bool
}

var _ model.SecretAuthorizer = (*Authorizer)(nil)

type key struct {
	namespace, serviceAccount string
	secret                    model.SecretRef
}

type entry struct {
	allowed bool
	// reason says why not; failed marks a review that did not complete.
	reason  string
	failed  bool
	expires time.Time
	// used is set when the answer was given since it was last checked:
	// only those are re-checked when they expire, the others dropped.
	used bool
}

// New returns an Authorizer; Run refreshes its answers.
func New(opts Options) (*Authorizer, error) {
	if opts.Client == nil {
		return nil, errors.New("credentials: Authorizer needs a Client")
	}
	if opts.AllowedTTL <= 0 {
		opts.AllowedTTL = 5 * time.Minute
	}
	if opts.DeniedTTL <= 0 {
		opts.DeniedTTL = time.Minute
	}
	if opts.ErrorRetry <= 0 {
		opts.ErrorRetry = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 10000
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Authorizer{opts: opts, cache: map[key]*entry{}}, nil
}

// CanGetSecret answers from the cache, or asks the API server (bounded by
// Timeout) when there is no current answer. A review that fails refuses
// (fail closed) and is retried by Run after ErrorRetry.
func (a *Authorizer) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	k := key{namespace: id.Namespace, serviceAccount: id.ServiceAccount, secret: ref}
	now := a.opts.Clock.Now()
	a.mu.Lock()
	if e := a.cache[k]; e != nil && now.Before(e.expires) {
		e.used = true
		a.mu.Unlock()
		return e.allowed, e.reason
	}
	if e := a.cache[k]; e != nil && !e.failed && a.failing {
		// Expired while the API server does not answer: the last answer
		// stands until a review succeeds (Run re-checks it).
		e.used = true
		a.mu.Unlock()
		return e.allowed, e.reason
	}
	if !a.failedAt.IsZero() && now.Before(a.failedAt.Add(a.opts.ErrorRetry)) {
		e := &entry{reason: "the API server did not answer a recent SubjectAccessReview; retried shortly", failed: true,
			expires: a.failedAt.Add(a.opts.ErrorRetry), used: true}
		a.storeLocked(k, e)
		a.mu.Unlock()
		return false, e.reason
	}
	a.mu.Unlock()
	e := a.review(k)
	e.used = true
	a.mu.Lock()
	e = a.keepLastAnswerLocked(k, e)
	a.storeLocked(k, e)
	a.mu.Unlock()
	return e.allowed, e.reason
}

// keepLastAnswerLocked returns the answer to keep for k after a review
// whose result is e: when the review failed (the API server is down or
// unreachable) and an answer from a completed review exists, that answer,
// to be re-checked after ErrorRetry. An outage then never takes away a
// Secret a gateway was serving, nor grants one it was refused; a grant or
// revocation made meanwhile takes effect once reviews answer again. With
// no earlier answer, a failed review refuses (fail closed). The caller
// holds mu.
func (a *Authorizer) keepLastAnswerLocked(k key, e *entry) *entry {
	old := a.cache[k]
	if !e.failed || old == nil || old.failed {
		return e
	}
	kept := *old
	kept.expires = e.expires
	kept.used = old.used || e.used
	return &kept
}

// review asks the API server whether k's ServiceAccount may get k's
// Secret, as the ServiceAccount's own requests would be authorized: its
// user name and the groups every ServiceAccount token carries.
func (a *Authorizer) review(k key) *entry {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.Timeout)
	defer cancel()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + k.namespace + ":" + k.serviceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + k.namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: k.secret.Namespace, Verb: "get", Version: "v1", Resource: "secrets", Name: k.secret.Name,
		},
	}}
	now := a.opts.Clock.Now()
	resp, err := a.opts.Client.Create(ctx, sar, metav1.CreateOptions{})
	a.mu.Lock()
	// Logged when reviews start and stop failing, not once per review.
	wasFailing := a.failing
	a.failing = err != nil
	if err != nil {
		a.failedAt = now
	}
	a.mu.Unlock()
	if err != nil {
		if !wasFailing {
			a.opts.Logger.Warn("SubjectAccessReviews fail: Secrets of other namespaces are refused until they succeed (retried every ErrorRetry)",
				"serviceAccount", k.namespace+"/"+k.serviceAccount, "secret", k.secret.String(), "retry", a.opts.ErrorRetry, "err", err)
		}
		return &entry{reason: "SubjectAccessReview failed (retried shortly): " + err.Error(), failed: true, expires: now.Add(a.opts.ErrorRetry)}
	}
	if wasFailing {
		a.opts.Logger.Info("SubjectAccessReviews answer again")
	}
	if resp.Status.Allowed && !resp.Status.Denied {
		return &entry{allowed: true, expires: now.Add(a.opts.AllowedTTL)}
	}
	reason := "RBAC does not allow get on it"
	if resp.Status.Reason != "" {
		reason += " (" + resp.Status.Reason + ")"
	}
	return &entry{reason: reason, expires: now.Add(a.opts.DeniedTTL)}
}

// storeLocked keeps e for k, dropping the answer expiring soonest when
// the cache is full. The caller holds mu.
func (a *Authorizer) storeLocked(k key, e *entry) {
	if _, ok := a.cache[k]; !ok && len(a.cache) >= a.opts.MaxEntries {
		var oldest key
		var first time.Time
		for ok, oe := range a.cache {
			if first.IsZero() || oe.expires.Before(first) {
				oldest, first = ok, oe.expires
			}
		}
		delete(a.cache, oldest)
	}
	a.cache[k] = e
}

// Len is the number of cached answers.
func (a *Authorizer) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cache)
}

// Run re-checks, every ErrorRetry, the answers that expired (or failed)
// and were given since they were last checked, drops the unused ones, and
// calls OnChange when an answer changed. It returns when ctx ends.
func (a *Authorizer) Run(ctx context.Context) {
	t := a.opts.Clock.NewTicker(a.opts.ErrorRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if a.refresh() && a.opts.OnChange != nil {
				a.opts.OnChange()
			}
		}
	}
}

// refresh re-checks the expired answers still in use and reports whether
// one changed.
func (a *Authorizer) refresh() bool {
	now := a.opts.Clock.Now()
	var due []key
	a.mu.Lock()
	for k, e := range a.cache {
		if now.Before(e.expires) {
			continue
		}
		if !e.used {
			delete(a.cache, k)
			continue
		}
		due = append(due, k)
	}
	a.mu.Unlock()
	changed := false
	for _, k := range due {
		e := a.review(k)
		a.mu.Lock()
		e = a.keepLastAnswerLocked(k, e)
		// An unchanged answer is still what the current config rests on;
		// a changed one is used again only if the push it causes asks.
		if old := a.cache[k]; old == nil || old.allowed != e.allowed {
			changed = true
		} else {
			e.used = old.used
		}
		a.storeLocked(k, e)
		a.mu.Unlock()
	}
	return changed
}
