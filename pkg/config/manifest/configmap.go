package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// ConfigMapKind marks a core v1 ConfigMap among the Gateway API objects of
// a manifest: in file mode a BackendTLSPolicy's caCertificateRefs name
// ConfigMaps of the folder (their data["ca.crt"]), which the Gateway API
// conversion reads beside the Gateway API objects. It is not a Gateway API
// kind: no CRD, no schema, never watched.
var ConfigMapKind = schema.GatewayAPIKind{Name: "ConfigMap", Plural: "configmaps", Versions: []string{"v1"}}

// MaxConfigMapBytes bounds a ConfigMap document, as the API server bounds
// a ConfigMap (1 MiB): a CA bundle is a few KiB, and a folder must not
// make the control plane hold more for one than a cluster would.
const MaxConfigMapBytes = 1 << 20

// isConfigMap reports whether a document is a core v1 ConfigMap.
func isConfigMap(o *object) bool { return o.APIVersion == "v1" && o.Kind == "ConfigMap" }

// parseConfigMap decodes a ConfigMap document strictly (an unknown field
// is named). Only data is kept (binaryData has no PEM for a CA); errors
// name the object and field, never the data.
func parseConfigMap(js []byte, obj *object, src string, opts Options) (*GatewayAPIObject, *config.Error) {
	ns := obj.Metadata.Namespace
	if ns == "" {
		ns = opts.DefaultNamespace
	}
	key := config.Key{Namespace: ns, Name: obj.Metadata.Name}
	fail := func(field, format string, args ...any) (*GatewayAPIObject, *config.Error) {
		return nil, &config.Error{Source: src, Key: key, Field: field,
			Message: fmt.Sprintf(format, args...) + " (ConfigMap " + ns + "/" + obj.Metadata.Name + ")"}
	}
	if obj.Metadata.Name == "" {
		return fail("metadata.name", "name is required")
	}
	if len(js) > MaxConfigMapBytes {
		return fail("data", "%d bytes is more than a ConfigMap may hold (%d bytes); skipped", len(js), MaxConfigMapBytes)
	}
	cm := &corev1.ConfigMap{}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cm); err != nil {
		return fail(unknownFieldPath(err), "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	cm.SetNamespace(ns)
	cm.BinaryData = nil
	canon, err := json.Marshal(cm)
	if err != nil {
		return fail("", "cannot encode: %v", err)
	}
	return &GatewayAPIObject{Kind: ConfigMapKind, Source: src, Object: cm, Sum: sha256.Sum256(canon)}, nil
}
