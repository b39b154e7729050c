// Package security authenticates the clients of the secure ADS port and of
// the debug endpoints: Kubernetes ServiceAccount tokens checked with
// TokenReview (cached for minutes, never past their expiry, and admitted
// by rate and in-flight limits before a review starts: Admission), and
// client certificates whose SPIFFE URI SAN names a ServiceAccount. It also
// keeps the secure port's serving certificate: a key pair read from files
// and reloaded when they change, or a self-signed CA and serving
// certificate kept in a Secret so every replica serves the same one; and
// caps the connections of the debug server (LimitListener).
//
// Nothing a client says about itself becomes an identity here: only what
// the API server or a trusted CA vouched for.
package security
