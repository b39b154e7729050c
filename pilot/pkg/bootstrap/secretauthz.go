package bootstrap

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/credentials"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// addSecretAuthorizer builds the SubjectAccessReview authorizer that
// decides whether a gateway's ServiceAccount may have the Secrets of its
// namespace (list, as istiod asks) or one Secret (get: an Ingress's TLS
// Secret of another namespace, say). Its reviews run on its own loop, not
// under the push lock: an answer that arrives or changes pushes again
// through pushSecret, like a changed certificate.
func (m *kubeMode) addSecretAuthorizer(opts Options) error {
	a, err := credentials.New(credentials.Options{
		Client:     m.clients.Reviews.AuthorizationV1().SubjectAccessReviews(),
		Logger:     opts.Logger.With("source", "secret-authorizer"),
		OnChange:   func() { m.pushSecret() },
		AllowedTTL: opts.SecretReview.AllowedTTL, DeniedTTL: opts.SecretReview.DeniedTTL,
		ErrorRetry: opts.SecretReview.Refresh, MaxStale: opts.SecretReview.MaxStale,
	})
	if err != nil {
		return err
	}
	m.authz = a
	return nil
}

// secretAuthorizer is the authorizer as the discovery server takes it.
func (m *kubeMode) secretAuthorizer() model.SecretAuthorizer { return m.authz }
