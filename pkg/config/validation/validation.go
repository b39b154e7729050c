// Package validation checks config objects for semantic errors that the
// schema alone does not catch. Every error names the field it is about.
//
// The rules follow Istio's validation of the networking kinds, Telemetry,
// RequestAuthentication, AuthorizationPolicy and EnvoyFilter where a
// gateway control plane depends on them: a config that passes here must not
// make Envoy reject (NACK) what the translators build from it. Each problem
// is reported separately, so one pass shows a user everything that is wrong
// with an object. Messages are written for the person editing the YAML.
package validation

import (
	"errors"
	"strconv"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	telemetryv1alpha1 "istio.io/api/telemetry/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Validate checks one object. It returns nil, or errors.Join of one
// *config.FieldError per problem, each naming a field such as
// "spec.http[0].route[1].weight". Problems are reported in a fixed order
// (document order, map keys sorted), so the output is deterministic.
func Validate(c config.Config) error {
	v := &validator{namespace: c.Namespace}
	v.metadata(c)
	switch c.Kind {
	case schema.Gateway:
		if spec, ok := specAs[networking.Gateway](v, c); ok {
			v.gateway(spec)
		}
	case schema.VirtualService:
		if spec, ok := specAs[networking.VirtualService](v, c); ok {
			v.virtualService(spec)
		}
	case schema.DestinationRule:
		if spec, ok := specAs[networking.DestinationRule](v, c); ok {
			v.destinationRule(spec)
		}
	case schema.ServiceEntry:
		if spec, ok := specAs[networking.ServiceEntry](v, c); ok {
			v.serviceEntry(spec)
		}
	case schema.Telemetry:
		if spec, ok := specAs[telemetryv1alpha1.Telemetry](v, c); ok {
			v.telemetry(spec)
		}
	case schema.RequestAuthentication:
		v.dryRunRefused(c)
		if spec, ok := specAs[securityv1beta1.RequestAuthentication](v, c); ok {
			v.requestAuthentication(spec)
		}
	case schema.AuthorizationPolicy:
		if spec, ok := specAs[securityv1beta1.AuthorizationPolicy](v, c); ok {
			v.authorizationPolicy(spec, c.Annotations)
		}
	case schema.EnvoyFilter:
		v.dryRunRefused(c)
		if spec, ok := specAs[networking.EnvoyFilter](v, c); ok {
			v.envoyFilter(spec)
		}
	default:
		v.add("kind", "unknown kind %v", c.Kind)
	}
	return v.err()
}

// specAs returns c.Spec as *T. A typed nil spec validates as an empty one,
// so the validators never dereference nil; a spec of another type is an
// error, since it means a source built the object wrongly.
func specAs[T any, P interface {
	*T
	proto.Message
}](v *validator, c config.Config) (P, bool) {
	if c.Spec == nil {
		v.add("spec", "spec is required")
		return nil, false
	}
	spec, ok := c.Spec.(P)
	if !ok {
		v.add("spec", "spec of a %v must be a %T, got %T", c.Kind, P(nil), c.Spec)
		return nil, false
	}
	if spec == nil {
		spec = new(T)
	}
	return spec, true
}

// validator collects the problems of one object.
type validator struct {
	// namespace is the object's namespace, which "." in exportTo means.
	namespace string
	errs      []error
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, config.FieldErrorf(field, format, args...))
}

// addErr records err, if any, against field.
func (v *validator) addErr(field string, err error) {
	if err != nil {
		v.add(field, "%s", err.Error())
	}
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) metadata(c config.Config) {
	switch {
	case c.Name == "":
		v.add("metadata.name", "name is required")
	case c.Kind == schema.Gateway && !isDNS1123Label(c.Name):
		// VirtualServices refer to gateways as "namespace/name", where the
		// name must be a DNS-1123 label, so a dotted name is unreachable.
		v.add("metadata.name", "%q is not a valid Gateway name: want a DNS-1123 label "+
			"(lower-case letters, digits and '-', at most 63 characters)", c.Name)
	case !isDNS1123Subdomain(c.Name):
		v.add("metadata.name", "%q is not a valid name: want a DNS-1123 subdomain "+
			"(lower-case letters, digits, '-' and '.', at most 253 characters)", c.Name)
	}
	if c.Namespace != "" && !isDNS1123Label(c.Namespace) {
		v.add("metadata.namespace", "%q is not a valid namespace: want a DNS-1123 label", c.Namespace)
	}
	v.labels("metadata.labels", c.Labels)
}

// at renders an index into a list field: at("spec.http", 2) is "spec.http[2]".
func at(list string, i int) string { return list + "[" + strconv.Itoa(i) + "]" }

// key renders a map entry: key("spec.selector", "app") is
// `spec.selector["app"]`. The key is always quoted, as the parser quotes
// it, so any key (with dots, spaces or brackets) reads unambiguously.
func key(m, k string) string { return m + "[" + strconv.Quote(k) + "]" }

// checkEnum reports an enum value outside its declared set. protojson
// accepts any number for a proto3 enum, so "mode: 7" reaches us.
func (v *validator) checkEnum(field string, names map[int32]string, n int32) bool {
	if _, ok := names[n]; !ok {
		v.add(field, "%d is not a known value", n)
		return false
	}
	return true
}
