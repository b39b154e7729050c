package jwks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// PublicOnlyJWKS is istiod's fail-closed key set (model.PublicOnlyJwks),
// byte for byte: a JWKS holding one RSA public key whose private key was
// generated and immediately discarded, so no token can be signed that
// validates against it. istiod inlines it for a jwtRule whose jwksUri (or
// issuer discovery) could not be fetched.
const PublicOnlyJWKS = `{
  "keys": [
    {
      "kty": "RSA",
      "e": "AQAB",
      "n": "0xObjM0UvS_oaazjpEYlAbwctEJ4L8pH3OuTb7qth7gUwqet-EzQB4dgFdvSdMgrLnSncQGRjpEYz3F3viIbH-3EN3TxSlPNviHxeOdyiBVfumN8dMxbLvVJUpfNOnvmMxJcl-8NNjAwcOjk4otSALaYgYYyOPyvKtgVdrQr-FoubWX4yrjxW-MJ2-7OBeepUUNOsVwGV23YX03sVkkyvY3otRflkBcY3_HKpBxJl9wk2GyOShN4_PNUF9-vwfnvOXMbCDX-w4PTef4geeb_GiT40YCKHTKMSPVanGRn5GExIWmki-mmqh94-mPTJyBR74ShspL3BxPZitDL574T1w"
    }
  ]
}`

// Defaults, istiod's values where istiod has one.
const (
	// DefaultRefreshInterval is istiod's PILOT_JWT_PUB_KEY_REFRESH_INTERVAL.
	DefaultRefreshInterval = 20 * time.Minute
	// DefaultRefreshIntervalOnFailure is istiod's JwtPubKeyRefreshIntervalOnFailure.
	DefaultRefreshIntervalOnFailure = time.Minute
	// DefaultMaxRefreshIntervalOnFailure is istiod's
	// JwtPubKeyRefreshIntervalOnFailureResetThreshold, the backoff cap.
	DefaultMaxRefreshIntervalOnFailure = 60 * time.Minute
	// DefaultEvictionDuration is istiod's JwtPubKeyEvictionDuration.
	DefaultEvictionDuration = 7 * 24 * time.Hour
	// DefaultRetryInterval is istiod's JwtPubKeyRetryInterval.
	DefaultRetryInterval = time.Second
	// DefaultRefreshRetries is istiod's networkFetchRetryCountOnRefreshFlow.
	DefaultRefreshRetries = 7
	// DefaultTimeout is the fetch timeout when the caller gives none
	// (istiod's jwtRule default, 5s).
	DefaultTimeout = 5 * time.Second
	// DefaultMaxResponseBytes bounds a fetched body (not in istiod).
	DefaultMaxResponseBytes = 1 << 20
	// DefaultMaxConcurrentFetches bounds refresh goroutines (not in istiod).
	DefaultMaxConcurrentFetches = 4
)

// Options configure a Resolver. Zero values take the defaults above.
type Options struct {
	// Clock drives refresh timers, retry waits and the used/refreshed
	// times; defaults to the real clock. HTTP timeouts use real time.
	Clock  clock.WithTicker
	Logger *slog.Logger
	// Client fetches; defaults to NewHTTPClient(HTTPClientOptions{}).
	Client *http.Client
	// RefreshInterval, RefreshIntervalOnFailure, MaxRefreshIntervalOnFailure,
	// EvictionDuration and RetryInterval: see the package comment.
	RefreshInterval             time.Duration
	RefreshIntervalOnFailure    time.Duration
	MaxRefreshIntervalOnFailure time.Duration
	EvictionDuration            time.Duration
	RetryInterval               time.Duration
	// RefreshRetries is how many times a background fetch is retried, at
	// RetryInterval, before it counts as failed; 0 means
	// DefaultRefreshRetries, negative means none.
	RefreshRetries int
	// MaxResponseBytes refuses larger bodies.
	MaxResponseBytes int64
	// MaxConcurrentFetches bounds the goroutines one refresh uses.
	MaxConcurrentFetches int
	// Registry, when set, gets istiod's fetch counters
	// (pilot_jwks_resolver_network_fetch_{success,fail}_total).
	Registry prometheus.Registerer
	// OnChange is called (on the Run goroutine) after a refresh changed at
	// least one cached key set, so the server can push new config.
	OnChange func()
	// Async makes JWKS never wait for the network: a key set not cached
	// yet is an ErrPending error (the rule is served fail-closed) and is
	// fetched by Run, whose OnChange then pushes it. istiod fetches while
	// translating; a control plane that many tenants share must not hold
	// every gateway's push for one tenant's slow jwksUri.
	Async bool
}

// ErrPending is returned (wrapped) by an Async resolver for a key set it
// is fetching.
var ErrPending = errors.New("key set is being fetched")

// Resolver caches key sets by (issuer, jwksUri). Safe for concurrent use;
// JWKS may be called before Run starts (then nothing is refreshed).
type Resolver struct {
	opts   Options
	clock  clock.WithTicker
	log    *slog.Logger
	client *http.Client

	mu      sync.Mutex
	entries map[cacheKey]*entry

	fetchOK, fetchFail prometheus.Counter

	// generation counts key set changes (Generation).
	generation atomic.Uint64

	// wake carries "a first fetch failed" to Run; one pending signal is
	// enough since Run retries every entry without a key set.
	wake chan struct{}
}

type cacheKey struct {
	issuer  string
	jwksURI string
}

type entry struct {
	// jwks is the cached key set; "" after a failed first fetch.
	jwks string
	// err is why jwks is empty.
	err           error
	lastRefreshed time.Time
	lastUsed      time.Time
	timeout       time.Duration
	// fetching is open while the first fetch runs; waiters block on it.
	fetching chan struct{}
}

// New returns a Resolver; call Run to refresh in the background.
func New(opts Options) *Resolver {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Client == nil {
		opts.Client = NewHTTPClient(HTTPClientOptions{})
	}
	setDefault(&opts.RefreshInterval, DefaultRefreshInterval)
	setDefault(&opts.RefreshIntervalOnFailure, DefaultRefreshIntervalOnFailure)
	setDefault(&opts.MaxRefreshIntervalOnFailure, DefaultMaxRefreshIntervalOnFailure)
	setDefault(&opts.EvictionDuration, DefaultEvictionDuration)
	setDefault(&opts.RetryInterval, DefaultRetryInterval)
	if opts.RefreshRetries == 0 {
		opts.RefreshRetries = DefaultRefreshRetries
	} else if opts.RefreshRetries < 0 {
		opts.RefreshRetries = 0
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxConcurrentFetches <= 0 {
		opts.MaxConcurrentFetches = DefaultMaxConcurrentFetches
	}
	r := &Resolver{
		opts:    opts,
		clock:   opts.Clock,
		log:     opts.Logger.With("component", "jwks"),
		client:  opts.Client,
		entries: map[cacheKey]*entry{},
		wake:    make(chan struct{}, 1),
		fetchOK: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pilot_jwks_resolver_network_fetch_success_total",
			Help: "Total number of successfully network fetch by pilot jwks resolver",
		}),
		fetchFail: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pilot_jwks_resolver_network_fetch_fail_total",
			Help: "Total number of failed network fetch by pilot jwks resolver",
		}),
	}
	if opts.Registry != nil {
		opts.Registry.MustRegister(r.fetchOK, r.fetchFail)
	}
	return r
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// ErrNoKeySet is returned (wrapped) for an entry whose fetch failed.
var ErrNoKeySet = errors.New("no key set fetched")

// JWKS returns the key set for a jwtRule's issuer and jwksUri (istiod's
// GetPublicKey): from the cache, else fetched now, bounded by timeout
// (DefaultTimeout when not positive). With an empty jwksURI the key set's
// address is discovered from issuer's OpenID configuration. An error means
// no key set is known: the caller inlines PublicOnlyJWKS.
func (r *Resolver) JWKS(issuer, jwksURI string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	k := cacheKey{issuer: issuer, jwksURI: jwksURI}
	r.mu.Lock()
	if e, ok := r.entries[k]; ok {
		for e.fetching != nil {
			ch := e.fetching
			r.mu.Unlock()
			<-ch
			r.mu.Lock()
		}
		now := r.clock.Now()
		if now.After(e.lastUsed) {
			e.lastUsed = now
		}
		e.timeout = timeout
		jwks, err := e.jwks, e.err
		r.mu.Unlock()
		if jwks == "" {
			return "", fmt.Errorf("%w for %s: %w", ErrNoKeySet, describe(k), err)
		}
		return jwks, nil
	}
	if r.opts.Async {
		now := r.clock.Now()
		r.entries[k] = &entry{timeout: timeout, err: ErrPending, lastUsed: now, lastRefreshed: now}
		r.mu.Unlock()
		select {
		case r.wake <- struct{}{}:
		default:
		}
		return "", fmt.Errorf("%w for %s: %w", ErrNoKeySet, describe(k), ErrPending)
	}
	e := &entry{timeout: timeout, fetching: make(chan struct{})}
	r.entries[k] = e
	r.mu.Unlock()

	// istiod's main flow: no retry, so a translation is never held up for
	// more than one timeout per key set.
	jwks, err := r.fetchKeySet(context.Background(), k, timeout, 0)
	now := r.clock.Now()
	r.mu.Lock()
	e.jwks, e.err = jwks, err
	e.lastRefreshed, e.lastUsed = now, now
	close(e.fetching)
	e.fetching = nil
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("JWKS fetch failed; the rule fails closed until a fetch succeeds",
			"issuer", issuer, "jwksUri", jwksURI, "error", err)
		select {
		case r.wake <- struct{}{}:
		default:
		}
		return "", fmt.Errorf("%w for %s: %w", ErrNoKeySet, describe(k), err)
	}
	return jwks, nil
}

func describe(k cacheKey) string {
	if k.jwksURI != "" {
		return fmt.Sprintf("jwksUri %q", k.jwksURI)
	}
	return fmt.Sprintf("issuer %q", k.issuer)
}

// Len is the number of cached entries (for tests and debug output).
func (r *Resolver) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// Run refreshes the cache until ctx is done. Call it once.
func (r *Resolver) Run(ctx context.Context) {
	interval := r.opts.RefreshInterval
	timer := r.clock.NewTimer(interval)
	defer timer.Stop()
	lastFailed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
			failed := r.refresh(ctx, false)
			// istiod's refreshCache backoff.
			switch {
			case !failed:
				interval = r.opts.RefreshInterval
			case lastFailed:
				interval = min(interval*2, r.opts.MaxRefreshIntervalOnFailure)
			default:
				interval = r.opts.RefreshIntervalOnFailure
			}
			lastFailed = failed
			timer.Reset(interval)
		case <-r.wake:
			// Only entries without a key set: the ticker's schedule for
			// the others is left alone, as in istiod.
			r.refresh(ctx, true)
		}
	}
}

type job struct {
	key     cacheKey
	old     string
	timeout time.Duration
}

// refresh fetches the cached entries (only those without a key set when
// onlyMissing), evicting stale ones first, and reports whether any fetch
// failed. It calls OnChange when a key set changed.
func (r *Resolver) refresh(ctx context.Context, onlyMissing bool) (failed bool) {
	now := r.clock.Now()
	var jobs []job
	r.mu.Lock()
	for k, e := range r.entries {
		if e.fetching != nil || (onlyMissing && e.jwks != "") {
			continue
		}
		// istiod: drop what has not been used, or not refreshed
		// successfully, for the eviction duration, so the cache does not
		// grow forever nor serve a key set that can no longer be checked.
		if now.Sub(e.lastUsed) >= r.opts.EvictionDuration || now.Sub(e.lastRefreshed) >= r.opts.EvictionDuration {
			r.log.Info("evicted cached JWKS", "issuer", k.issuer, "jwksUri", k.jwksURI,
				"lastUsed", e.lastUsed, "lastRefreshed", e.lastRefreshed)
			delete(r.entries, k)
			continue
		}
		jobs = append(jobs, job{key: k, old: e.jwks, timeout: e.timeout})
	}
	r.mu.Unlock()
	if len(jobs) == 0 {
		return false
	}

	var (
		wg              sync.WaitGroup
		resMu           sync.Mutex
		changed, anyErr bool
	)
	work := make(chan job)
	for range min(len(jobs), r.opts.MaxConcurrentFetches) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				c, err := r.refreshOne(ctx, j, now)
				resMu.Lock()
				changed = changed || c
				anyErr = anyErr || err != nil
				resMu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()

	if changed && r.opts.OnChange != nil && ctx.Err() == nil {
		r.opts.OnChange()
	}
	return anyErr
}

func (r *Resolver) refreshOne(ctx context.Context, j job, now time.Time) (changed bool, err error) {
	jwks, err := r.fetchKeySet(ctx, j.key, j.timeout, r.opts.RefreshRetries)
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[j.key]
	if !ok {
		return false, err
	}
	if err != nil {
		r.log.Warn("JWKS refresh failed", "issuer", j.key.issuer, "jwksUri", j.key.jwksURI, "error", err)
		if e.jwks == "" && !r.opts.Async {
			// istiod drops an entry that never had a key set, so the next
			// translation fetches again instead of serving the failure.
			// An Async resolver keeps it and retries it itself: its
			// callers may not ask again until the key set changes.
			delete(r.entries, j.key)
		}
		if e.jwks == "" {
			e.err = err
		}
		return false, err
	}
	e.jwks, e.err = jwks, nil
	e.lastRefreshed = now
	if !Differ(j.old, jwks) {
		return false, nil
	}
	r.generation.Add(1)
	r.log.Info("JWKS changed", "issuer", j.key.issuer, "jwksUri", j.key.jwksURI)
	return true, nil
}

// fetchKeySet resolves the key set's address (OpenID discovery when the
// key has none) and fetches it, retrying up to retries times.
func (r *Resolver) fetchKeySet(ctx context.Context, k cacheKey, timeout time.Duration, retries int) (string, error) {
	uri := k.jwksURI
	if uri == "" {
		if k.issuer == "" {
			return "", errors.New("jwksUri and issuer are both empty")
		}
		var err error
		uri, err = r.discover(ctx, k.issuer, timeout, retries)
		if err != nil {
			return "", err
		}
	}
	body, err := r.getWithRetry(ctx, uri, timeout, retries)
	if err != nil {
		return "", err
	}
	if err := ValidateFormat(body); err != nil {
		// istiod: never inline an arbitrary body (an SSRF-controlled
		// jwksUri would otherwise leak it through config_dump).
		return "", fmt.Errorf("%s is not a JWKS: %w", uri, err)
	}
	return string(body), nil
}

// openIDDiscoverySuffix is where OpenID Connect Discovery serves an
// issuer's configuration.
const openIDDiscoverySuffix = "/.well-known/openid-configuration"

func (r *Resolver) discover(ctx context.Context, issuer string, timeout time.Duration, retries int) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + openIDDiscoverySuffix
	body, err := r.getWithRetry(ctx, u, timeout, retries)
	if err != nil {
		return "", fmt.Errorf("OpenID discovery: %w", err)
	}
	return jwksURIFromDiscovery(u, body)
}

func (r *Resolver) getWithRetry(ctx context.Context, uri string, timeout time.Duration, retries int) ([]byte, error) {
	for i := 0; ; i++ {
		body, err := r.get(ctx, uri, timeout)
		if err == nil || i >= retries {
			return body, err
		}
		r.log.Debug("JWKS fetch failed, retrying", "uri", uri, "error", err, "in", r.opts.RetryInterval)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.clock.After(r.opts.RetryInterval):
		}
	}
}

// Generation counts the changes of cached key sets so far: a caller that
// keeps what it built from them may reuse it while this is the same.
func (r *Resolver) Generation() uint64 { return r.generation.Load() }
