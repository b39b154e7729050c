// Package jwks fetches, caches and refreshes the JSON Web Key Sets that
// RequestAuthentication jwtRules name by jwksUri (or by issuer, through
// OpenID discovery), so the control plane can inline them into Envoy's
// jwt_authn filter, as istiod's JwksResolver (pilot/pkg/model/
// jwks_resolver.go) does in its default fetch mode (PILOT_JWT_ENABLE_REMOTE_JWKS
// unset: istiod fetches).
//
// The flow follows istiod:
//
//   - JWKS is called during translation. A cached key set is returned at
//     once; on a miss it is fetched in the caller's goroutine, without
//     retry, bounded by the rule's timeout (istiod's "main flow"), and the
//     result, success or failure, is cached. Concurrent callers for the
//     same key wait for one fetch.
//   - A failed first fetch wakes Run, which retries (with retries) the
//     entries that have no key set and drops those that still fail, so the
//     next translation tries again; a success calls OnChange.
//   - Run refreshes every entry on RefreshInterval (istiod's 20m default);
//     after a failed refresh the interval drops to RefreshIntervalOnFailure
//     (1m) and doubles on each further failure up to
//     MaxRefreshIntervalOnFailure (60m); a success restores it. An entry
//     unused, or not refreshed successfully, for EvictionDuration (a week)
//     is dropped. A refresh that changes a key set (compared key by key,
//     ignoring order by kid) calls OnChange so the server can push.
//
// What a translator inlines when a fetch fails is PublicOnlyJWKS, istiod's
// fail-closed key set: an RSA public key whose private half was discarded,
// so no token validates against it and every token of that issuer is
// rejected, while requests without a token still pass (allow_missing).
//
// Bounds beyond istiod: a response body larger than MaxResponseBytes (1 MiB
// by default) is refused, as is a body that is not a JWKS (a JSON object
// with a "keys" array; istiod checks this on the first fetch only, this
// package on refreshes too, keeping the previous key set). Refresh fetches
// run on at most MaxConcurrentFetches goroutines (istiod starts one per
// entry). Connections to link-local and known cloud-metadata addresses are
// refused at dial time, as in istiod, plus any BlockedPrefixes.
package jwks
