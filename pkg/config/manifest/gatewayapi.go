package manifest

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // gatewayapi_schemas.json
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// GatewayAPIObject is one Kubernetes Gateway API object of a manifest:
// GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute,
// ReferenceGrant, ListenerSet or BackendTLSPolicy, as the
// sigs.k8s.io/gateway-api v1 type the Kubernetes informers deliver, so the
// one conversion reads both.
type GatewayAPIObject struct {
	Kind schema.GatewayAPIKind
	// Source is the file and document, as for config.Config.
	Source string
	// Object is a *gw.GatewayClass, *gw.Gateway, *gw.HTTPRoute,
	// *gw.GRPCRoute, *gw.TLSRoute, *gw.TCPRoute, *gw.ReferenceGrant,
	// *gw.ListenerSet or *gw.BackendTLSPolicy, without status. Shared: do
	// not modify.
	Object metav1.Object
	// Sum identifies the object's content (metadata and spec).
	Sum [sha256.Size]byte
}

// Key names the object: kind, namespace ("" for a GatewayClass) and name.
func (o GatewayAPIObject) Key() string {
	return o.Kind.Name + " " + o.Object.GetNamespace() + "/" + o.Object.GetName()
}

// Objects are what a manifest holds: Istio config and Gateway API objects.
type Objects struct {
	Configs    []config.Config
	GatewayAPI []GatewayAPIObject
}

// newGatewayAPIObject returns an empty object of kind.
func newGatewayAPIObject(kind string) metav1.Object {
	switch kind {
	case schema.GatewayClassKind.Name:
		return &gw.GatewayClass{}
	case schema.GatewayKind.Name:
		return &gw.Gateway{}
	case schema.HTTPRouteKind.Name:
		return &gw.HTTPRoute{}
	case schema.GRPCRouteKind.Name:
		return &gw.GRPCRoute{}
	case schema.TLSRouteKind.Name:
		return &gw.TLSRoute{}
	case schema.TCPRouteKind.Name:
		return &gw.TCPRoute{}
	case schema.ReferenceGrantKind.Name:
		return &gw.ReferenceGrant{}
	case schema.ListenerSetKind.Name:
		return &gw.ListenerSet{}
	case schema.BackendTLSPolicyKind.Name:
		return &gw.BackendTLSPolicy{}
	}
	return nil
}

// dropStatus clears what a file may carry but file mode computes itself.
func dropStatus(o metav1.Object) {
	switch o := o.(type) {
	case *gw.GatewayClass:
		o.Status = gw.GatewayClassStatus{}
	case *gw.Gateway:
		o.Status = gw.GatewayStatus{}
	case *gw.HTTPRoute:
		o.Status = gw.HTTPRouteStatus{}
	case *gw.GRPCRoute:
		o.Status = gw.GRPCRouteStatus{}
	case *gw.TLSRoute:
		o.Status = gw.TLSRouteStatus{}
	case *gw.TCPRoute:
		o.Status = gw.TCPRouteStatus{}
	case *gw.ListenerSet:
		o.Status = gw.ListenerSetStatus{}
	case *gw.BackendTLSPolicy:
		o.Status = gw.PolicyStatus{}
	}
}

// parseGatewayAPI decodes one Gateway API document (js, its JSON) of kind
// k into its typed object. The spec is first checked against the kind's
// CRD schema, so an unknown field or a bad value is named with its path.
func parseGatewayAPI(js []byte, obj *object, k schema.GatewayAPIKind, src string, opts Options) (*GatewayAPIObject, *config.Error) {
	ns := obj.Metadata.Namespace
	if k.ClusterScoped {
		ns = ""
	} else if ns == "" {
		ns = opts.DefaultNamespace
	}
	key := config.Key{Namespace: ns, Name: obj.Metadata.Name}
	fail := func(field, format string, args ...any) (*GatewayAPIObject, *config.Error) {
		return nil, &config.Error{Source: src, Key: key, Field: field,
			Message: fmt.Sprintf(format, args...) + " (" + k.Name + " " + ns + "/" + obj.Metadata.Name + ")"}
	}
	if obj.Metadata.Name == "" {
		return fail("metadata.name", "name is required")
	}
	specSchema, err := gatewayAPISchema(k.Name, obj.versionOf())
	if err != nil {
		return fail("apiVersion", "%v", err)
	}
	var whole map[string]any
	if err := json.Unmarshal(js, &whole); err != nil {
		return fail("", "invalid object: %v", err)
	}
	if spec, ok := whole["spec"]; ok {
		if fe := specSchema.check(spec, "spec"); fe != nil {
			return fail(fe.Field, "%s", fe.Message)
		}
	} else if k.Name != schema.ReferenceGrantKind.Name {
		return fail("spec", "required field is missing")
	}
	out := newGatewayAPIObject(k.Name)
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fail(unknownFieldPath(err), "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	dropStatus(out)
	out.SetNamespace(ns)
	if out.GetGeneration() == 0 {
		// As the API server sets it, so status shows observedGeneration 1.
		out.SetGeneration(1)
	}
	canon, err := json.Marshal(out)
	if err != nil {
		return fail("", "cannot encode: %v", err)
	}
	return &GatewayAPIObject{Kind: k, Source: src, Object: out, Sum: sha256.Sum256(canon)}, nil
}

// unknownFieldPath returns the top-level field a strict decode refused
// (the spec's fields were checked against the schema already).
func unknownFieldPath(err error) string {
	msg := err.Error()
	if _, field, ok := strings.Cut(msg, `unknown field "`); ok {
		return strings.TrimSuffix(field, `"`)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	return ""
}

func (o *object) versionOf() string {
	_, v, _ := strings.Cut(o.APIVersion, "/")
	return v
}

// gatewayAPISchemas are the spec schemas of the CRDs of
// manifests/crds/gateway-api-experimental (the very files users apply), by
// "Kind/version", decoded and compiled once on first use. They are
// generated from those CRDs into gatewayapi_schemas.json, pruned to what
// openAPISchema checks, so that binaries embed the schemas rather than the
// CRDs; TestGatewayAPISchemasUpToDate fails when the file is stale.
//
// The experimental channel's CRDs, not the standard ones: each is a
// superset of its standard twin (same kinds, same v1 versions, more
// fields), and the experimental HTTPRoute fields Wayfinder serves (retry,
// sessionPersistence) must be accepted in a file as on a cluster that
// installed the experimental CRDs. A file is refused only for what no
// channel serves; the conversion warns about the fields it does not apply.
var gatewayAPISchemas = sync.OnceValues(loadGatewayAPISchemas)

//go:generate go run ./internal/crdschema/gen -crds ../../../manifests/crds/gateway-api-experimental -out gatewayapi_schemas.json
//go:embed gatewayapi_schemas.json
var gatewayAPISchemasJSON []byte

func gatewayAPISchema(kind, version string) (*openAPISchema, error) {
	all, err := gatewayAPISchemas()
	if err != nil {
		return nil, err
	}
	s, ok := all[kind+"/"+version]
	if !ok {
		return nil, fmt.Errorf("no schema for %s %s among the Gateway API CRDs", kind, version)
	}
	return s, nil
}

func loadGatewayAPISchemas() (map[string]*openAPISchema, error) {
	out, err := decodeGatewayAPISchemas(gatewayAPISchemasJSON)
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		s.compile()
	}
	return out, nil
}

// decodeGatewayAPISchemas decodes the generated file's schemas, by
// "Kind/version", without compiling their patterns.
func decodeGatewayAPISchemas(data []byte) (map[string]*openAPISchema, error) {
	var file struct {
		Schemas map[string]*openAPISchema `json:"schemas"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("gateway API schemas: %w", err)
	}
	return file.Schemas, nil
}
