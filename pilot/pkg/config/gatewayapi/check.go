package gatewayapi

import (
	"errors"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// checkHTTPRoute validates one converted route as the store validates a
// VirtualService (a regex that does not compile, say), so that a bad match
// leaves out that match alone and not the whole VirtualService of its
// hostname, which holds other routes' matches too. It returns what is
// wrong, fields named relative to the route, or nil.
func checkHTTPRoute(namespace string, r *networking.HTTPRoute) error {
	return check(config.Config{
		Meta: config.Meta{Kind: schema.VirtualService, Namespace: namespace, Name: "check"},
		Spec: &networking.VirtualService{Hosts: []string{"*"}, Gateways: []string{"check"}, Http: []*networking.HTTPRoute{r}},
	}, "spec.http[0].")
}

// checkGateway validates a converted Istio Gateway (one listener).
func checkGateway(c config.Config) error { return check(c, "") }

func check(c config.Config, trim string) error {
	err := validation.Validate(c)
	if err == nil {
		return nil
	}
	var msgs []string
	for _, e := range config.ErrorsFor("", config.Key{}, err) {
		field := strings.TrimPrefix(e.Field, trim)
		if field == "" {
			msgs = append(msgs, e.Message)
			continue
		}
		msgs = append(msgs, field+": "+e.Message)
	}
	return errors.New(strings.Join(msgs, "; "))
}
