package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
)

// secureParts are what Kubernetes or file mode needs for the TLS ADS port
// and authenticated debug endpoints.
type secureParts struct {
	tokens   *security.TokenAuthenticator // nil in file mode
	failures *security.Failures
	// xdsAdmission and debugAdmission bound the TokenReviews new tokens
	// on each port may start (nil in file mode).
	xdsAdmission, debugAdmission *security.Admission
	keyPair                      *security.KeyPair // nil: no secure port
	caPEM                        []byte            // the self-signed CA, when one is used
}

// newSecureParts sets up authentication and the serving certificate: from
// the files, or (Kubernetes mode) the self-signed one kept in a Secret.
func newSecureParts(opts Options, kube *kubeMode, reg prometheus.Registerer) (*secureParts, error) {
	sec := opts.Security
	p := &secureParts{failures: security.NewFailures(reg, opts.Logger, nil)}
	if kube != nil {
		p.tokens = security.NewTokenAuthenticator(security.TokenOptions{
			Client: kube.clients.Reviews, MaxTokenBytes: sec.MaxTokenBytes, PositiveTTL: sec.TokenCacheTTL,
			ReviewTimeout: sec.Reviews.Timeout,
		})
		m := security.NewAdmissionMetrics(reg)
		p.xdsAdmission = security.NewAdmission(security.PortXDS, sec.Admission, m, opts.Logger, nil)
		p.debugAdmission = security.NewAdmission(security.PortDebug, sec.DebugAdmission, m, opts.Logger, nil)
	}
	if sec.SecureGRPCAddr == "" {
		return p, nil
	}
	switch {
	case sec.TLSCertFile != "":
		kp, err := security.NewKeyPair(sec.TLSCertFile, sec.TLSKeyFile, opts.Logger)
		if err != nil {
			return nil, err
		}
		p.keyPair = kp
	case kube == nil:
		opts.Logger.Info("secure ADS port off: file mode serves it only with --tls-cert-file and --tls-key-file (and --client-ca-file)",
			"secureGrpcAddr", sec.SecureGRPCAddr)
	case opts.PodNamespace == "":
		opts.Logger.Warn("secure ADS port off: without --tls-cert-file it needs --pod-namespace to keep its self-signed CA in",
			"secureGrpcAddr", sec.SecureGRPCAddr)
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pair, caPEM, err := security.EnsureSelfSigned(ctx, security.SelfSignedOptions{
			Client: kube.clients.Kube, Namespace: opts.PodNamespace, Logger: opts.Logger,
			DNSNames: servingNames(opts.PodNamespace, opts.DomainSuffix, sec.TLSSANs),
		})
		if err != nil {
			return nil, fmt.Errorf("self-signed serving certificate for the secure ADS port: %w", err)
		}
		p.keyPair, p.caPEM = security.StaticKeyPair(pair), caPEM
	}
	return p, nil
}

// servingNames are the DNS names of the self-signed serving certificate:
// the Service of manifests/base (pilot-discovery) in its namespace, in
// every form a client in the cluster may dial, and the extra SANs.
func servingNames(ns, domainSuffix string, extra []string) []string {
	svc := "pilot-discovery." + ns
	names := []string{svc + ".svc", svc + ".svc." + domainSuffix, svc, "pilot-discovery"}
	for _, n := range extra {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// newSecureGRPC builds the TLS gRPC server: the serving certificate read at
// each handshake, client certificates verified when given (ClientAuth
// VerifyClientCertIfGiven with --client-ca-file), and every stream
// authenticated before it reaches the discovery server.
func newSecureGRPC(opts Options, p *secureParts, base []grpc.ServerOption) (*grpc.Server, error) {
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: p.keyPair.GetCertificate,
		NextProtos:     []string{"h2"},
	}
	if f := opts.Security.ClientCAFile; f != "" {
		pemBytes, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", f)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	auth := &security.StreamAuthenticator{Tokens: p.tokens, Audiences: opts.Security.TokenAudiences, Failures: p.failures,
		Admission: p.xdsAdmission}
	so := append(append([]grpc.ServerOption{}, base...),
		// gRPC accepts 16 MiB of headers by default: far more than a token
		// and gRPC's own headers, and held per stream before any check.
		grpc.MaxHeaderListSize(opts.Security.MaxHeaderListSize),
		grpc.Creds(security.CountingCredentials(credentials.NewTLS(cfg), p.failures)),
		grpc.ChainStreamInterceptor(auth.StreamInterceptor()),
		grpc.ChainUnaryInterceptor(auth.UnaryInterceptor()),
	)
	return grpc.NewServer(so...), nil
}
