package app

import (
	"github.com/spf13/cobra"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// addAuthFlags adds the flags bounding what authentication may cost
// (bootstrap.SecurityOptions): admission before TokenReview, the token
// cache, the review client and the debug server. Defaults are shown from
// the security and bootstrap packages; a negative admission rate or count
// turns that limit off.
func addAuthFlags(cmd *cobra.Command, o *bootstrap.SecurityOptions) {
	f := cmd.Flags()
	x, r, d := security.DefaultXDSAdmission, bootstrap.DefaultReviewClient, bootstrap.DefaultDebugServer
	f.StringSliceVar(&o.DebugAdminServiceAccounts, "debug-admin-service-accounts", nil, "further ServiceAccounts (NAMESPACE/NAME, comma-separated) whose tokens may read every debug endpoint")
	f.Float64Var(&o.Admission.Rate, "auth-reviews-per-second", x.Rate, "TokenReviews the secure ADS port starts per second for tokens it has no answer for; more are refused (Unavailable) before any review")
	f.IntVar(&o.Admission.Burst, "auth-review-burst", x.Burst, "TokenReviews the secure ADS port starts at once (a fleet of gateways reconnecting after a restart)")
	f.Float64Var(&o.Admission.PeerRate, "auth-reviews-per-second-per-peer", x.PeerRate, "TokenReviews per second one client IP address may cause on the secure ADS port; more are refused (ResourceExhausted)")
	f.IntVar(&o.Admission.PeerBurst, "auth-review-burst-per-peer", x.PeerBurst, "TokenReviews one client IP address may cause at once on the secure ADS port")
	f.IntVar(&o.Admission.MaxInFlight, "auth-max-reviews-in-flight", x.MaxInFlight, "TokenReviews of the secure ADS port waiting for the API server at one time; more are refused (Unavailable)")
	f.IntVar(&o.MaxTokenBytes, "auth-max-token-bytes", security.DefaultMaxTokenBytes, "longest bearer token reviewed; a longer one is refused without a TokenReview")
	f.DurationVar(&o.TokenCacheTTL, "auth-token-cache-ttl", security.DefaultPositiveCacheTTL, "how long an accepted token is trusted without another TokenReview (never past its expiry)")
	f.Uint32Var(&o.MaxHeaderListSize, "grpc-max-header-list-size", bootstrap.DefaultMaxHeaderListSize, "largest header block (bytes) of a stream on the secure ADS port")
	f.Float32Var(&o.Reviews.QPS, "kube-review-qps", r.QPS, "rate limit of the Kubernetes client creating TokenReviews and SubjectAccessReviews (its own, apart from Lease renewal and status writes)")
	f.IntVar(&o.Reviews.Burst, "kube-review-burst", r.Burst, "burst of that client")
	f.DurationVar(&o.Reviews.Timeout, "kube-review-timeout", r.Timeout, "deadline of one TokenReview or SubjectAccessReview, the client's rate-limiter wait included")
	f.IntVar(&o.DebugServer.MaxConnections, "http-max-connections", d.MaxConnections, "open connections of the debug and metrics server; more are closed on accept (negative: no bound)")
	f.IntVar(&o.DebugServer.MaxConnectionsPerPeer, "http-max-connections-per-peer", d.MaxConnectionsPerPeer, "open connections of the debug and metrics server from one IP address (negative: no bound)")
}
