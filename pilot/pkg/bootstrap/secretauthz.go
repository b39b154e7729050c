package bootstrap

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/credentials"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// addSecretAuthorizer builds the SubjectAccessReview authorizer that lets
// a gateway have another namespace's Secret when its ServiceAccount may
// get it (an Ingress's TLS Secret, say). A changed answer pushes again
// through pushSecret, like a changed certificate.
func (m *kubeMode) addSecretAuthorizer(opts Options) error {
	a, err := credentials.New(credentials.Options{
		Client:     m.clients.Kube.AuthorizationV1().SubjectAccessReviews(),
		Logger:     opts.Logger.With("source", "secret-authorizer"),
		OnChange:   func() { m.pushSecret() },
		AllowedTTL: opts.SecretReview.AllowedTTL, DeniedTTL: opts.SecretReview.DeniedTTL,
		ErrorRetry: opts.SecretReview.Refresh,
	})
	if err != nil {
		return err
	}
	m.authz = a
	return nil
}

// secretAuthorizer is the authorizer as the discovery server takes it.
func (m *kubeMode) secretAuthorizer() model.SecretAuthorizer { return m.authz }
