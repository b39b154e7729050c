package security

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Defaults of TokenOptions.
const (
	DefaultTokenCacheSize   = 10000
	DefaultNegativeCacheTTL = 10 * time.Second
	// DefaultPositiveCacheTTL is how long an accepted token is trusted
	// without asking again (never past its exp). Automounted tokens are
	// valid for a year: a deleted ServiceAccount or a revoked token should
	// stop working within minutes, not then.
	DefaultPositiveCacheTTL = 5 * time.Minute
	// DefaultUnknownExpiryTTL is how long a valid token whose expiry cannot
	// be read (no exp claim) is trusted without asking again.
	DefaultUnknownExpiryTTL = time.Minute
	// DefaultMaxTokenBytes bounds a bearer token: a projected
	// ServiceAccount token is 1-2 KiB, one with long audiences and names
	// under 4 KiB.
	DefaultMaxTokenBytes = 8 << 10
	// DefaultReviewTimeout bounds one TokenReview, the wait for the
	// client's rate limiter included.
	DefaultReviewTimeout = 5 * time.Second
)

// TokenOptions configure a TokenAuthenticator.
type TokenOptions struct {
	// Client creates the TokenReviews. Required.
	Client kclient.Kube
	// CacheSize bounds the cached results; zero means DefaultTokenCacheSize.
	CacheSize int
	// NegativeTTL is how long a refused token stays refused without asking
	// the API server again; zero means DefaultNegativeCacheTTL.
	NegativeTTL time.Duration
	// PositiveTTL is how long an accepted token is trusted without asking
	// again, never past its exp; zero means DefaultPositiveCacheTTL.
	PositiveTTL time.Duration
	// MaxTokenBytes refuses longer tokens without a review; zero means
	// DefaultMaxTokenBytes.
	MaxTokenBytes int
	// ReviewTimeout bounds each TokenReview; zero means
	// DefaultReviewTimeout.
	ReviewTimeout time.Duration
	// Clock decides expiry; nil means the real clock.
	Clock clock.PassiveClock
}

// TokenAuthenticator verifies ServiceAccount tokens with TokenReview. A
// verified token is cached for PositiveTTL, never past its expiry (its JWT
// exp claim, read only after the API server vouched for the token); a
// refused one for NegativeTTL. Only a hash of the token is kept. What
// cannot be a ServiceAccount token (longer than MaxTokenBytes, not a JWT)
// is refused without asking.
type TokenAuthenticator struct {
	client        kclient.Kube
	clock         clock.PassiveClock
	negativeTTL   time.Duration
	positiveTTL   time.Duration
	maxTokenBytes int
	reviewTimeout time.Duration
	cache         *ttlCache[tokenResult]
}

type tokenResult struct {
	id  *model.Identity
	err error
}

// ErrTokenRefused wraps every error for a token the API server did not
// accept (as opposed to an API server that could not be asked).
var ErrTokenRefused = errors.New("token refused")

// NewTokenAuthenticator returns an authenticator using o.
func NewTokenAuthenticator(o TokenOptions) *TokenAuthenticator {
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultTokenCacheSize
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = DefaultNegativeCacheTTL
	}
	if o.PositiveTTL <= 0 {
		o.PositiveTTL = DefaultPositiveCacheTTL
	}
	if o.MaxTokenBytes <= 0 {
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if o.ReviewTimeout <= 0 {
		o.ReviewTimeout = DefaultReviewTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &TokenAuthenticator{client: o.Client, clock: o.Clock, negativeTTL: o.NegativeTTL, positiveTTL: o.PositiveTTL,
		maxTokenBytes: o.MaxTokenBytes, reviewTimeout: o.ReviewTimeout, cache: newTTLCache[tokenResult](o.CacheSize)}
}

// Authenticate returns the ServiceAccount token belongs to, if the API
// server accepts it for one of audiences (none: the API server's own
// audiences). The error wraps ErrTokenRefused when the token itself is
// the problem. A token answered before is answered from the cache; for
// any other, gate (when not nil) decides first whether a review may start
// at all, and its *OverloadError is returned as is.
func (a *TokenAuthenticator) Authenticate(ctx context.Context, token string, audiences []string, gate Gate) (*model.Identity, error) {
	if len(token) > a.maxTokenBytes {
		return nil, fmt.Errorf("%w: token of %d bytes, longer than the %d a ServiceAccount token may be here", ErrTokenRefused, len(token), a.maxTokenBytes)
	}
	if !jwtShaped(token) {
		return nil, fmt.Errorf("%w: not a JWT, which every ServiceAccount token is", ErrTokenRefused)
	}
	key := cacheKey(token, audiences)
	now := a.clock.Now()
	if r, ok := a.cache.get(key, now); ok {
		return r.id, r.err
	}
	if gate != nil {
		release, err := gate()
		if err != nil {
			return nil, err
		}
		defer release()
	}
	ctx, cancel := context.WithTimeout(ctx, a.reviewTimeout)
	defer cancel()
	review, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		// Not cached: the API server's trouble says nothing about the token.
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	id, err := reviewIdentity(review.Status, audiences)
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrTokenRefused, err)
		a.cache.put(key, tokenResult{err: err}, now.Add(a.negativeTTL), now)
		return nil, err
	}
	expires := now.Add(a.positiveTTL)
	if exp, ok := jwtExpiry(token); ok {
		expires = minTime(expires, exp)
	} else {
		expires = minTime(expires, now.Add(DefaultUnknownExpiryTTL))
	}
	a.cache.put(key, tokenResult{id: id}, expires, now)
	return id, nil
}

func reviewIdentity(st authnv1.TokenReviewStatus, audiences []string) (*model.Identity, error) {
	if !st.Authenticated {
		if st.Error != "" {
			return nil, fmt.Errorf("not authenticated: %s", truncate(st.Error))
		}
		return nil, errors.New("not authenticated")
	}
	if len(audiences) > 0 && len(st.Audiences) == 0 {
		// An authenticator that does not support audiences accepted it:
		// not good enough when audiences were asked for.
		return nil, fmt.Errorf("token is not for any of the audiences %s", strings.Join(audiences, ", "))
	}
	return serviceAccountIdentity(st.User.Username)
}

// cacheKey hashes token and audiences: the cache never holds a token.
func cacheKey(token string, audiences []string) string {
	h := sha256.New()
	h.Write([]byte(token))
	for _, a := range audiences {
		h.Write([]byte{0})
		h.Write([]byte(a))
	}
	return string(h.Sum(nil))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// jwtShaped reports whether token is made like a JWT (JWS compact form):
// three base64url parts, the first a JSON object naming its "alg". Every
// ServiceAccount token is one, so anything else is refused without a
// TokenReview; a forged JWT still costs one, which admission bounds.
func jwtShaped(token string) bool {
	h, rest, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	p, sig, ok := strings.Cut(rest, ".")
	if !ok || p == "" || sig == "" || strings.Contains(sig, ".") || !base64URL(p) || !base64URL(sig) {
		return false
	}
	header, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return false
	}
	var v struct {
		Alg string `json:"alg"`
	}
	return json.Unmarshal(header, &v) == nil && v.Alg != ""
}

// base64URL reports whether s uses only the unpadded base64url alphabet.
func base64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// jwtExpiry reads the exp claim of a JWT without verifying it; it is used
// only to bound how long a token the API server accepted stays cached.
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(*claims.Exp, 0), true
}

// BearerToken returns the token of an "Bearer TOKEN" authorization value.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
