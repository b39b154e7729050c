package debugapi

import (
	"encoding/json"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Configz is the body of /debug/configz.
type Configz struct {
	// Configs are every object in the store, by kind (schema order), then
	// namespace and name.
	Configs []ConfigzObject `json:"configs"`
	// Errors are the config problems standing now.
	Errors []ConfigzError `json:"errors"`
	// SecretRefusals are the secrets connected proxies are not sent
	// (another namespace's, or over the plaintext port), by gateway group.
	SecretRefusals []SecretRefusalz `json:"secretRefusals"`
	// Status is, per object used by a gateway or with a problem, what is
	// written to its status in Kubernetes mode (model.ObjectState).
	Status []ConfigzStatus `json:"status"`
	// GatewayAPI is the status of the Gateway API objects handled; absent
	// when the Gateway API is off. The server does not fill it: the
	// assembly adds it as the section named GatewayAPISection, after the
	// fields above, so readers decode it here.
	GatewayAPI *GatewayAPIz `json:"gatewayAPI,omitempty"`
	// Mesh is the mesh config in force, where it came from and the last
	// refused update. Added by the assembly as the section named
	// MeshSection.
	Mesh *Meshz `json:"mesh,omitempty"`
}

// GatewayAPISection is the name of Configz.GatewayAPI in the JSON.
const GatewayAPISection = "gatewayAPI"

// MeshSection is the name of Configz.Mesh in the JSON.
const MeshSection = "mesh"

// ConfigzObject is one config object.
type ConfigzObject struct {
	Kind            string            `json:"kind"`
	Namespace       string            `json:"namespace"`
	Name            string            `json:"name"`
	Source          string            `json:"source,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	// Spec is the object's spec in protojson form.
	Spec json.RawMessage `json:"spec"`
}

// ConfigzError is one config problem. Origin is "source" (a file or
// object the source rejected) or "translation".
type ConfigzError struct {
	Origin    string `json:"origin"`
	Source    string `json:"source,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Field     string `json:"field,omitempty"`
	Message   string `json:"message"`
	Warning   bool   `json:"warning,omitempty"`
}

// NewConfigzError shows e, of the given origin.
func NewConfigzError(origin string, e *config.Error) ConfigzError {
	out := ConfigzError{Origin: origin, Source: e.Source, Field: e.Field, Message: e.Message, Warning: e.Warning,
		Namespace: e.Key.Namespace, Name: e.Key.Name}
	if e.Key.Kind != 0 {
		out.Kind = e.Key.Kind.String()
	}
	return out
}

// ConfigzStatus is one object's state in /debug/configz: the same
// findings as the status written on it in Kubernetes mode.
type ConfigzStatus struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	model.ObjectState
	Errors []ConfigzError `json:"errors,omitempty"`
}

// SecretRefusalz is one gateway group's refused secrets, in
// /debug/configz: the proxies it concerns and what they are not sent.
type SecretRefusalz struct {
	Group   string                `json:"group"`
	Scope   string                `json:"scope"`
	Proxies []string              `json:"proxies"`
	Refused []model.SecretRefusal `json:"refused"`
}
