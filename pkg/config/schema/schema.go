// Package schema defines every config kind Wayfinder understands, once.
//
// Nothing else in the tree keeps its own list of kinds: the file parser, the
// validators, the config stores and the debug endpoints all range over All()
// or look a kind up here.
package schema

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	telemetry "istio.io/api/telemetry/v1"
)

// Kind identifies a config kind. The zero value is not a valid kind.
type Kind uint8

const (
	Gateway Kind = iota + 1
	VirtualService
	DestinationRule
	ServiceEntry
	Telemetry
	RequestAuthentication
	AuthorizationPolicy
	EnvoyFilter
)

// Schema describes one kind: its Kubernetes group, versions and the proto
// type of its spec.
type Schema struct {
	Kind Kind
	// Name is the Kubernetes kind, e.g. "VirtualService".
	Name string
	// Plural is the lower-case resource name, e.g. "virtualservices".
	Plural string
	Group  string
	// Versions lists every accepted API version; the first is preferred.
	Versions []string
	// NewSpec returns an empty spec message of this kind.
	NewSpec func() proto.Message
}

var all = []Schema{
	{Kind: Gateway, Name: "Gateway", Plural: "gateways", Group: "networking.istio.io",
		Versions: istioVersions, NewSpec: func() proto.Message { return &networking.Gateway{} }},
	{Kind: VirtualService, Name: "VirtualService", Plural: "virtualservices", Group: "networking.istio.io",
		Versions: istioVersions, NewSpec: func() proto.Message { return &networking.VirtualService{} }},
	{Kind: DestinationRule, Name: "DestinationRule", Plural: "destinationrules", Group: "networking.istio.io",
		Versions: istioVersions, NewSpec: func() proto.Message { return &networking.DestinationRule{} }},
	{Kind: ServiceEntry, Name: "ServiceEntry", Plural: "serviceentries", Group: "networking.istio.io",
		Versions: istioVersions, NewSpec: func() proto.Message { return &networking.ServiceEntry{} }},
	{Kind: Telemetry, Name: "Telemetry", Plural: "telemetries", Group: "telemetry.istio.io",
		Versions: telemetryVersions, NewSpec: func() proto.Message { return &telemetry.Telemetry{} }},
	{Kind: RequestAuthentication, Name: "RequestAuthentication", Plural: "requestauthentications", Group: "security.istio.io",
		Versions: securityVersions, NewSpec: func() proto.Message { return &security.RequestAuthentication{} }},
	{Kind: AuthorizationPolicy, Name: "AuthorizationPolicy", Plural: "authorizationpolicies", Group: "security.istio.io",
		Versions: securityVersions, NewSpec: func() proto.Message { return &security.AuthorizationPolicy{} }},
	{Kind: EnvoyFilter, Name: "EnvoyFilter", Plural: "envoyfilters", Group: "networking.istio.io",
		Versions: envoyFilterVersions, NewSpec: func() proto.Message { return &networking.EnvoyFilter{} }},
}

// istioVersions are the networking.istio.io versions we accept; v1 and
// v1beta1 are aliases of the v1alpha3 protos in istio.io/api.
var istioVersions = []string{"v1", "v1beta1", "v1alpha3"}

// envoyFilterVersions: EnvoyFilter has no v1 or v1beta1; the CRD of
// istio.io/api v1.31.1 serves it at v1alpha3 only.
var envoyFilterVersions = []string{"v1alpha3"}

// telemetryVersions are the telemetry.istio.io versions istiod reads; v1 is
// an alias of the v1alpha1 proto in istio.io/api.
var telemetryVersions = []string{"v1", "v1alpha1"}

// securityVersions are the security.istio.io versions istiod reads; v1 is
// an alias of the v1beta1 protos in istio.io/api.
var securityVersions = []string{"v1", "v1beta1"}

// All returns every schema, in Kind order.
func All() []Schema { return all }

// Kinds returns every kind, in order.
func Kinds() []Kind {
	out := make([]Kind, len(all))
	for i, s := range all {
		out[i] = s.Kind
	}
	return out
}

// ByKind returns the schema of k; it panics on an unknown kind, which is a
// programming error.
func ByKind(k Kind) Schema {
	if int(k) < 1 || int(k) > len(all) {
		panic(fmt.Sprintf("schema: unknown kind %d", k))
	}
	return all[k-1]
}

// String returns the Kubernetes kind name.
func (k Kind) String() string {
	if int(k) < 1 || int(k) > len(all) {
		return fmt.Sprintf("Kind(%d)", k)
	}
	return all[k-1].Name
}

// FromName finds a kind by its Kubernetes kind name ("VirtualService").
func FromName(name string) (Kind, bool) {
	for _, s := range all {
		if s.Name == name {
			return s.Kind, true
		}
	}
	return 0, false
}

// ByAPIVersion finds the schema for an apiVersion ("group/version") and kind
// as written in a manifest. The error says which part did not match.
func ByAPIVersion(apiVersion, kindName string) (Schema, error) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return Schema{}, fmt.Errorf("apiVersion %q: want group/version", apiVersion)
	}
	for _, s := range all {
		if s.Name != kindName || s.Group != group {
			continue
		}
		for _, v := range s.Versions {
			if v == version {
				return s, nil
			}
		}
		return Schema{}, fmt.Errorf("apiVersion %q: version %q of %s is not supported (want one of %s)",
			apiVersion, version, kindName, strings.Join(s.Versions, ", "))
	}
	return Schema{}, fmt.Errorf("kind %q in %q is not a kind Wayfinder reads", kindName, apiVersion)
}
