package model

import "context"

// Identity is who a client proved to be on an authenticated ADS port: a
// Kubernetes ServiceAccount verified by TokenReview, or the SPIFFE URI SAN
// of a client certificate signed by a trusted CA. Nothing a client says
// about itself (node id, metadata) is an Identity.
type Identity struct {
	// Namespace and ServiceAccount are the verified ServiceAccount's.
	Namespace      string
	ServiceAccount string
	// TrustDomain is the SPIFFE trust domain of a certificate identity;
	// empty for tokens.
	TrustDomain string
	// Method says how it was verified: MethodToken or MethodCertificate.
	Method string
}

// How an Identity was verified.
const (
	MethodToken       = "token"
	MethodCertificate = "certificate"
)

// String is "ns/NAMESPACE/sa/NAME (METHOD)", for logs and debug pages.
func (i *Identity) String() string {
	if i == nil {
		return "unauthenticated"
	}
	return "ns/" + i.Namespace + "/sa/" + i.ServiceAccount + " (" + i.Method + ")"
}

type identityKey struct{}

// WithIdentity returns ctx carrying id; the authenticating gRPC interceptor
// of the secure ADS port sets it for each stream.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the verified identity ctx carries, nil when the
// stream came over an unauthenticated port.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
