package bootstrap

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// SecurityOptions configure the TLS ADS port (Istio's :15012) and who may
// use it and the debug endpoints.
type SecurityOptions struct {
	// SecureGRPCAddr is where ADS is served over TLS to authenticated
	// clients; empty means no secure port.
	SecureGRPCAddr string
	// TLSCertFile and TLSKeyFile are the serving key pair, reread when
	// they change. Without them, Kubernetes mode keeps a self-signed CA
	// and certificate in a Secret in PodNamespace; file mode serves no
	// secure port.
	TLSCertFile string
	TLSKeyFile  string
	// TLSReloadInterval is how often the key pair files are reread behind
	// file-system events; zero means security.DefaultReloadInterval.
	TLSReloadInterval time.Duration
	// TLSSANs are further DNS names of the self-signed serving certificate.
	TLSSANs []string
	// ClientCAFile verifies client certificates (identity from their
	// spiffe URI SAN); empty means tokens only.
	ClientCAFile string
	// TokenAudiences are the audiences a ServiceAccount token on the
	// secure port must be for; nil means wayfinder and istio-ca.
	TokenAudiences []string
	// DebugAdminNamespaces are the namespaces whose ServiceAccounts may
	// read every debug endpoint in Kubernetes mode; nil means PodNamespace
	// (Wayfinder's own) alone.
	DebugAdminNamespaces []string
	// DebugAdminServiceAccounts are further ServiceAccounts, as
	// "NAMESPACE/NAME", that may read every debug endpoint.
	DebugAdminServiceAccounts []string
	// Admission bounds the TokenReviews new tokens on the secure ADS port
	// may start; zero fields take security.DefaultXDSAdmission.
	Admission security.AdmissionOptions
	// DebugAdmission is the same for the debug port; zero fields take
	// security.DefaultDebugAdmission.
	DebugAdmission security.AdmissionOptions
	// MaxTokenBytes refuses longer bearer tokens without a review; zero
	// means security.DefaultMaxTokenBytes.
	MaxTokenBytes int
	// TokenCacheTTL is how long an accepted token is trusted without
	// another review (never past its expiry); zero means
	// security.DefaultPositiveCacheTTL.
	TokenCacheTTL time.Duration
	// MaxHeaderListSize bounds the headers of a stream on the secure ADS
	// port (gRPC's own default is 16 MiB); zero means
	// DefaultMaxHeaderListSize.
	MaxHeaderListSize uint32
	// Reviews configure the Kubernetes client of TokenReviews and
	// SubjectAccessReviews.
	Reviews ReviewClientOptions
	// DebugServer bounds the debug and metrics HTTP server.
	DebugServer DebugServerOptions
}

// DefaultMaxHeaderListSize is the secure port's bound on a stream's
// headers: a bearer token (at most 8 KiB by default) and gRPC's own
// headers fit many times over.
const DefaultMaxHeaderListSize = 64 << 10

// ReviewClientOptions configure the Kubernetes client that creates
// TokenReviews and SubjectAccessReviews. It has its own rate limiter and
// connection, so reviews (whose number clients drive) never delay Lease
// renewal, status writes or informers, nor the other way round.
type ReviewClientOptions struct {
	// QPS and Burst are its client-side rate limit; zero means
	// DefaultReviewClient's.
	QPS   float32
	Burst int
	// Timeout bounds each request; zero means DefaultReviewClient's.
	Timeout time.Duration
}

// DefaultReviewClient allows 100 reviews a second, 200 at once: the
// secure port admits 100 new tokens a second (security.DefaultXDSAdmission)
// with 200 in flight, and SubjectAccessReviews are cached for minutes.
var DefaultReviewClient = ReviewClientOptions{QPS: 100, Burst: 200, Timeout: 5 * time.Second}

// DebugServerOptions bound the debug and metrics HTTP server. There is no
// write timeout: /debug/pprof/profile and /debug/pprof/trace answer after
// the seconds asked for, and a client that reads slowly holds only its own
// connection, which MaxConnectionsPerPeer bounds.
type DebugServerOptions struct {
	// MaxConnections and MaxConnectionsPerPeer (one IP address) bound the
	// open connections; more are closed on accept. Negative: no bound.
	MaxConnections, MaxConnectionsPerPeer int
	// ReadHeaderTimeout, ReadTimeout (the whole request) and IdleTimeout
	// (between requests on a kept-alive connection).
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
}

// DefaultDebugServer: Prometheus, the kubelet's probes and a few people
// need a handful of connections; 256 leave room for many scrapers and the
// per-address bound keeps one client from taking them all.
var DefaultDebugServer = DebugServerOptions{
	MaxConnections: 256, MaxConnectionsPerPeer: 32,
	ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second,
	MaxHeaderBytes: 64 << 10,
}

// DefaultTokenAudiences are Wayfinder's own and the one Istio's proxies
// request for istiod (istio-ca), so Istio bootstraps keep working.
var DefaultTokenAudiences = []string{"wayfinder", "istio-ca"}

func (o *SecurityOptions) applyDefaults(podNamespace string) {
	if o.TokenAudiences == nil {
		o.TokenAudiences = slices.Clone(DefaultTokenAudiences)
	}
	// Only Wayfinder's own namespace by default: istio-system (where
	// Istio-style installs run their gateways, each with a token) and
	// kube-system hold ServiceAccounts of workloads that should not read
	// every tenant's config and pprof.
	if o.DebugAdminNamespaces == nil && podNamespace != "" {
		o.DebugAdminNamespaces = []string{podNamespace}
	}
	if o.MaxHeaderListSize == 0 {
		o.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	r := DefaultReviewClient
	o.Reviews.QPS = cmp.Or(o.Reviews.QPS, r.QPS)
	o.Reviews.Burst = cmp.Or(o.Reviews.Burst, r.Burst)
	o.Reviews.Timeout = cmp.Or(o.Reviews.Timeout, r.Timeout)
	d, h := DefaultDebugServer, &o.DebugServer
	h.MaxConnections = cmp.Or(h.MaxConnections, d.MaxConnections)
	h.MaxConnectionsPerPeer = cmp.Or(h.MaxConnectionsPerPeer, d.MaxConnectionsPerPeer)
	h.ReadHeaderTimeout = cmp.Or(h.ReadHeaderTimeout, d.ReadHeaderTimeout)
	h.ReadTimeout = cmp.Or(h.ReadTimeout, d.ReadTimeout)
	h.IdleTimeout = cmp.Or(h.IdleTimeout, d.IdleTimeout)
	h.MaxHeaderBytes = cmp.Or(h.MaxHeaderBytes, d.MaxHeaderBytes)
}

func (o *SecurityOptions) validate(kubernetesMode bool) error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	if !kubernetesMode && o.SecureGRPCAddr != "" && o.TLSCertFile != "" && o.ClientCAFile == "" {
		return errors.New("file mode has no TokenReview: the secure ADS port needs --client-ca-file to authenticate clients")
	}
	for _, sa := range o.DebugAdminServiceAccounts {
		ns, name, ok := strings.Cut(sa, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--debug-admin-service-accounts %q: want NAMESPACE/NAME", sa)
		}
	}
	switch {
	case o.MaxTokenBytes < 0:
		return fmt.Errorf("--auth-max-token-bytes %d: must not be negative", o.MaxTokenBytes)
	case o.TokenCacheTTL < 0:
		return fmt.Errorf("--auth-token-cache-ttl %s: must not be negative", o.TokenCacheTTL)
	case o.Reviews.QPS < 0 || o.Reviews.Burst < 0 || o.Reviews.Timeout < 0:
		return errors.New("--kube-review-qps, --kube-review-burst and --kube-review-timeout must not be negative")
	case o.DebugServer.ReadHeaderTimeout < 0 || o.DebugServer.ReadTimeout < 0 || o.DebugServer.IdleTimeout < 0:
		return errors.New("the debug server's timeouts must not be negative")
	}
	return nil
}
