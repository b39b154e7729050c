// Package credentials decides which gateway may read which Kubernetes
// Secret: a model.SecretAuthorizer that asks the API server with
// SubjectAccessReviews whether a ServiceAccount may list a namespace's
// Secrets or get one Secret, and keeps the answers for a bounded time in
// a bounded cache. Reviews run on their own loop (Run), never on the
// caller's: a question without an answer is refused at once and answered
// in the background, and OnChange asks for a push when it is.
package credentials

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
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
	// AllowedTTL is how long an allowed answer is kept before it is
	// checked again (default 5m, as istiod), DeniedTTL a denied one
	// (default 1m): a Role granted or revoked takes effect within it.
	// ErrorRetry is how often the loop looks for answers due and retries
	// reviews that failed (default 10s).
	AllowedTTL, DeniedTTL, ErrorRetry time.Duration
	// MaxStale bounds how long an allowed answer stands while the reviews
	// re-checking it fail (default 2 x AllowedTTL, counted from the review
	// that last allowed it): past it the Secret is refused until a review
	// answers again (fail closed). A denied answer stands while reviews
	// fail.
	MaxStale time.Duration
	// Timeout bounds one review (default 5s).
	Timeout time.Duration
	// MaxEntries bounds the cache (default 10,000 answers); when full, the
	// answer expiring soonest is dropped.
	MaxEntries int
	// OnChange is called, from Run, after reviews changed an answer the
	// callers may have been given (a first answer, a grant, a revocation,
	// an allowed answer gone stale), so that the proxies' config is pushed
	// again. It must not block on the Authorizer.
	OnChange func()
	// Clock defaults to the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Reasons given for an answer that is not RBAC's. They name no Secret and
// say nothing of whether it exists: only the ServiceAccount's rights.
const (
	reasonPending = "its SubjectAccessReview is not answered yet (served once it allows it)"
	reasonStale   = "the review that allowed it is older than the maximum staleness and reviews fail; refused until one answers"
	reasonFailed  = "the SubjectAccessReview failed (retried shortly)"
)

// Authorizer is the Kubernetes model.SecretAuthorizer. Safe for
// concurrent use; its answers never wait for the API server.
type Authorizer struct {
	opts Options
	mu   sync.Mutex
	// cache holds one answer per question.
	cache map[question]*entry
	// due are the questions to review on the next round of Run: new ones
	// and expired ones still in use.
	due map[question]bool
	// wake tells Run that new questions are due.
	wake chan struct{}
	// failing is whether the last review failed (logged on change).
	failing bool
}

var _ model.SecretAuthorizer = (*Authorizer)(nil)

// question is one SubjectAccessReview: whether a ServiceAccount may list
// the Secrets of a namespace (name empty) or get one Secret.
type question struct {
	namespace, serviceAccount string
	verb                      string
	secret                    model.SecretRef
}

type entry struct {
	// answered is false until a review completes; until then the
	// question is refused as pending.
	answered bool
	allowed  bool
	// reason says why not.
	reason string
	// confirmed is when a review last gave this answer; expires when it
	// is to be checked again.
	confirmed, expires time.Time
	// failed marks the last review of it as failed.
	failed bool
	// used is set when the answer was given since it was last checked:
	// only those are re-checked when they expire, the others dropped.
	used bool
	// given is the last answer handed out, so that Run knows when an
	// answer callers rely on changed.
	given bool
}

// New returns an Authorizer; Run answers its questions.
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
	if opts.MaxStale <= 0 {
		opts.MaxStale = 2 * opts.AllowedTTL
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
	return &Authorizer{opts: opts, cache: map[question]*entry{}, due: map[question]bool{}, wake: make(chan struct{}, 1)}, nil
}

// CanListSecrets reports whether id may list the Secrets of namespace:
// istiod's test for sending a proxy the Secrets of its own namespace.
func (a *Authorizer) CanListSecrets(id model.Identity, namespace string) (bool, string) {
	return a.ask(question{namespace: id.Namespace, serviceAccount: id.ServiceAccount, verb: "list",
		secret: model.SecretRef{Namespace: namespace}})
}

// CanGetSecret reports whether id may get Secret ref.
func (a *Authorizer) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	return a.ask(question{namespace: id.Namespace, serviceAccount: id.ServiceAccount, verb: "get", secret: ref})
}

// ask answers q from the cache, never waiting: a question not answered
// yet is refused and queued for Run. An expired answer is given while Run
// re-checks it, except an allowed one older than MaxStale.
func (a *Authorizer) ask(q question) (bool, string) {
	now := a.opts.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.cache[q]
	if e == nil {
		e = &entry{reason: reasonPending, used: true}
		a.storeLocked(q, e)
		a.queueLocked(q)
		return false, e.reason
	}
	e.used = true
	if !e.answered {
		return false, e.reason
	}
	if !now.Before(e.expires) {
		a.queueLocked(q)
	}
	ok, reason := a.effectiveLocked(e, now)
	e.given = ok
	return ok, reason
}

// effectiveLocked is the answer e gives at now: its own, but an allowed
// answer not confirmed within MaxStale is refused. The caller holds mu.
func (a *Authorizer) effectiveLocked(e *entry, now time.Time) (bool, string) {
	if e.allowed && !now.Before(e.confirmed.Add(a.opts.MaxStale)) {
		return false, reasonStale
	}
	return e.allowed, e.reason
}

// queueLocked marks q due and wakes Run. The caller holds mu.
func (a *Authorizer) queueLocked(q question) {
	a.due[q] = true
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// review asks the API server q, as the ServiceAccount's own requests
// would be authorized: its user name and the groups every ServiceAccount
// token carries.
func (a *Authorizer) review(ctx context.Context, q question) (allowed bool, reason string, err error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + q.namespace + ":" + q.serviceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + q.namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: q.secret.Namespace, Verb: q.verb, Version: "v1", Resource: "secrets", Name: q.secret.Name,
		},
	}}
	resp, err := a.opts.Client.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	if resp.Status.Allowed && !resp.Status.Denied {
		return true, "", nil
	}
	reason = "RBAC does not allow " + q.verb + " on it"
	if q.secret.Name == "" {
		reason = "RBAC does not allow list on the Secrets of namespace " + q.secret.Namespace
	}
	if resp.Status.Reason != "" {
		reason += " (" + resp.Status.Reason + ")"
	}
	return false, reason, nil
}

// record stores the outcome of reviewing q at now. The caller holds mu.
func (a *Authorizer) recordLocked(q question, now time.Time, allowed bool, reason string, err error) {
	e := a.cache[q]
	if e == nil {
		e = &entry{}
		a.storeLocked(q, e)
	}
	if err != nil {
		// The last answer stands (an allowed one until MaxStale); a
		// question never answered stays refused. Retried next round.
		e.failed = true
		e.expires = now.Add(a.opts.ErrorRetry)
		if !e.answered {
			e.reason = reasonFailed
		}
		return
	}
	e.answered, e.failed, e.allowed, e.reason, e.confirmed = true, false, allowed, reason, now
	if allowed {
		e.expires = now.Add(a.opts.AllowedTTL)
	} else {
		e.expires = now.Add(a.opts.DeniedTTL)
	}
}

// storeLocked keeps e for q, dropping the answer expiring soonest when
// the cache is full. The caller holds mu.
func (a *Authorizer) storeLocked(q question, e *entry) {
	if _, ok := a.cache[q]; !ok && len(a.cache) >= a.opts.MaxEntries {
		var oldest question
		var first time.Time
		for oq, oe := range a.cache {
			if first.IsZero() || oe.expires.Before(first) {
				oldest, first = oq, oe.expires
			}
		}
		delete(a.cache, oldest)
		delete(a.due, oldest)
	}
	a.cache[q] = e
}

// Len is the number of cached answers.
func (a *Authorizer) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cache)
}

// Run answers the questions asked (at once when woken) and, every
// ErrorRetry, re-checks the answers that expired and were given since
// they were last checked, drops the unused ones, and calls OnChange when
// an answer given out changed. It returns when ctx ends.
func (a *Authorizer) Run(ctx context.Context) {
	t := a.opts.Clock.NewTicker(a.opts.ErrorRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-t.C():
		}
		if a.round(ctx) && a.opts.OnChange != nil {
			a.opts.OnChange()
		}
	}
}

// round reviews what is due (new questions, expired answers in use),
// stopping at the first failure (the API server is not answering: the
// rest waits for the next round), and reports whether an answer callers
// were given, or are waiting for, changed.
func (a *Authorizer) round(ctx context.Context) bool {
	now := a.opts.Clock.Now()
	a.mu.Lock()
	for q, e := range a.cache {
		if now.Before(e.expires) || !e.answered && !e.failed {
			continue
		}
		if !e.used {
			delete(a.cache, q)
			delete(a.due, q)
			continue
		}
		a.due[q] = true
	}
	due := slices.SortedFunc(maps.Keys(a.due), compareQuestions)
	a.mu.Unlock()

	changed := false
	for _, q := range due {
		if ctx.Err() != nil {
			return changed
		}
		allowed, reason, err := a.review(ctx, q)
		now := a.opts.Clock.Now()
		a.mu.Lock()
		delete(a.due, q)
		e := a.cache[q]
		wasAnswered := e != nil && e.answered
		a.recordLocked(q, now, allowed, reason, err)
		e = a.cache[q]
		if ok, _ := a.effectiveLocked(e, now); e.answered && (!wasAnswered || ok != e.given) {
			// A first answer (the caller was refused as pending) or
			// one that differs from what was given out: the push it
			// causes asks again if the config still needs it, so it
			// is in use only then. An unchanged answer is still what
			// the current config rests on, and stays in use.
			changed = true
			e.given = ok
			e.used = false
		}
		wasFailing := a.failing
		a.failing = err != nil
		a.mu.Unlock()
		if err != nil {
			if !wasFailing {
				a.opts.Logger.Warn("SubjectAccessReviews fail: Secrets not yet reviewed are refused, and allowed answers stand at most MaxStale, until they succeed",
					"serviceAccount", q.namespace+"/"+q.serviceAccount, "verb", q.verb, "retry", a.opts.ErrorRetry, "maxStale", a.opts.MaxStale, "err", err)
			}
			a.mu.Lock()
			for _, rest := range due {
				if a.due[rest] {
					// Left for the next round.
					if re := a.cache[rest]; re != nil {
						re.expires = now.Add(a.opts.ErrorRetry)
					}
				}
			}
			a.mu.Unlock()
			break
		}
		if wasFailing {
			a.opts.Logger.Info("SubjectAccessReviews answer again")
		}
	}
	// Allowed answers that went stale while reviews fail are refused from
	// now on: that is a change callers must hear of.
	now = a.opts.Clock.Now()
	a.mu.Lock()
	for _, e := range a.cache {
		if ok, _ := a.effectiveLocked(e, now); e.answered && ok != e.given {
			e.given = ok
			changed = true
		}
	}
	a.mu.Unlock()
	return changed
}

func compareQuestions(x, y question) int {
	for _, c := range [][2]string{{x.namespace, y.namespace}, {x.serviceAccount, y.serviceAccount}, {x.verb, y.verb},
		{x.secret.Namespace, y.secret.Namespace}, {x.secret.Name, y.secret.Name}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}
