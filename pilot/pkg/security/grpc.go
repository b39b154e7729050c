package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// StreamAuthenticator decides who an ADS stream on the secure port is: a
// verified client certificate first, else a bearer token in the
// "authorization" metadata. Either may be disabled (nil Tokens; no client
// CA in the TLS config).
type StreamAuthenticator struct {
	// Tokens verifies bearer tokens; nil refuses them.
	Tokens *TokenAuthenticator
	// Audiences are the audiences a token must be for.
	Audiences []string
	// Failures counts and logs refusals.
	Failures *Failures
	// Admission bounds the TokenReviews new tokens may start; nil: none.
	Admission *Admission
}

// StreamInterceptor authenticates every stream and puts the identity into
// its context (model.WithIdentity); a stream without a valid credential
// ends with Unauthenticated before the handler runs, so it never touches
// the discovery server's state.
func (a *StreamAuthenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		id, err := a.authenticate(ss.Context())
		if err != nil {
			return err
		}
		return handler(srv, &identityStream{ServerStream: ss, ctx: model.WithIdentity(ss.Context(), id)})
	}
}

// UnaryInterceptor refuses unauthenticated unary calls the same way (the
// secure port serves none today; this keeps any added later behind auth).
func (a *StreamAuthenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		id, err := a.authenticate(ctx)
		if err != nil {
			return nil, err
		}
		return handler(model.WithIdentity(ctx, id), req)
	}
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }

func (a *StreamAuthenticator) authenticate(ctx context.Context) (*model.Identity, error) {
	peerAddr := ""
	p, _ := peer.FromContext(ctx)
	if p != nil && p.Addr != nil {
		peerAddr = p.Addr.String()
	}
	if p != nil {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.PeerCertificates) > 0 {
			id, err := certificateIdentity(ti.State.PeerCertificates[0])
			if err != nil {
				a.Failures.Record(peerAddr, ReasonInvalidCertificate, "client certificate names no ServiceAccount", "err", err)
				return nil, status.Errorf(codes.Unauthenticated, "client certificate: %v", err)
			}
			return id, nil
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var token string
	for _, v := range md.Get("authorization") {
		if t, ok := BearerToken(v); ok {
			token = t
			break
		}
	}
	if token == "" || a.Tokens == nil {
		a.Failures.Record(peerAddr, ReasonNoCredential, "no credential")
		return nil, status.Error(codes.Unauthenticated, "no credential: send a ServiceAccount token as \"authorization: Bearer TOKEN\" metadata or a client certificate")
	}
	id, err := a.Tokens.Authenticate(ctx, token, a.Audiences, a.Admission.Gate(peerAddr))
	if err != nil {
		var over *OverloadError
		if errors.As(err, &over) {
			// Counted and logged by the admission. Unavailable and
			// ResourceExhausted both make Envoy retry after a backoff.
			code := codes.Unavailable
			if over.Limit == LimitPeerRate {
				code = codes.ResourceExhausted
			}
			return nil, status.Error(code, over.Error())
		}
		if errors.Is(err, ErrTokenRefused) {
			a.Failures.Record(peerAddr, ReasonInvalidToken, "token refused", "err", err)
			return nil, status.Errorf(codes.Unauthenticated, "authentication failed: %v", err)
		}
		a.Failures.Record(peerAddr, ReasonTokenReviewError, "token could not be reviewed", "err", err)
		return nil, status.Errorf(codes.Unavailable, "authentication failed: %v", err)
	}
	return id, nil
}

// certificateIdentity is the ServiceAccount of a verified client
// certificate's one SPIFFE URI SAN.
func certificateIdentity(cert *x509.Certificate) (*model.Identity, error) {
	var found *model.Identity
	for _, u := range cert.URIs {
		if u.Scheme != "spiffe" {
			continue
		}
		id, err := spiffeIdentity(u)
		if err != nil {
			return nil, err
		}
		if found != nil {
			return nil, errors.New("certificate has more than one spiffe URI SAN")
		}
		found = id
	}
	if found == nil {
		return nil, errors.New("certificate has no spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/NAME URI SAN")
	}
	return found, nil
}

// CountingCredentials wraps server TLS credentials so a handshake refused
// for its client certificate (signed by another CA, expired) is counted
// and logged as invalid_certificate; gRPC itself would only drop the
// connection.
func CountingCredentials(c credentials.TransportCredentials, f *Failures) credentials.TransportCredentials {
	return &countingCreds{TransportCredentials: c, failures: f}
}

type countingCreds struct {
	credentials.TransportCredentials
	failures *Failures
}

func (c *countingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		var verr *tls.CertificateVerificationError
		var aerr x509.UnknownAuthorityError
		var ierr x509.CertificateInvalidError
		if errors.As(err, &verr) || errors.As(err, &aerr) || errors.As(err, &ierr) {
			c.failures.Record(conn.RemoteAddr().String(), ReasonInvalidCertificate, "client certificate not trusted", "err", fmt.Sprint(err))
		}
	}
	return out, info, err
}

func (c *countingCreds) Clone() credentials.TransportCredentials {
	return &countingCreds{TransportCredentials: c.TransportCredentials.Clone(), failures: c.failures}
}
