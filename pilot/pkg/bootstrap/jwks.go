package bootstrap

import (
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/jwks"
)

// newJWKSResolver is the RequestAuthentication key set cache the
// gateways' jwt_authn filters are built from, as istiod's JwksResolver:
// fetched by the control plane, inlined, refreshed in the background;
// unlike istiod, a key set not fetched yet is served fail-closed until
// the background fetch brings it. A key set that changes (or arrives) is
// a full push, once push is set (setPush).
func newJWKSResolver(log *slog.Logger, registry prometheus.Registerer) (*jwks.Resolver, func(func(*model.PushRequest))) {
	var push atomic.Pointer[func(*model.PushRequest)]
	r := jwks.New(jwks.Options{
		Logger:   log.With("component", "jwks"),
		Registry: registry,
		// Never fetch while translating: a tenant's slow jwksUri must not
		// hold other gateways' pushes (docs/config.md, Differences).
		Async: true,
		OnChange: func() {
			if p := push.Load(); p != nil {
				(*p)(&model.PushRequest{Full: true, Reasons: map[string]int{"jwks": 1}})
			}
		},
	})
	return r, func(f func(*model.PushRequest)) { push.Store(&f) }
}
