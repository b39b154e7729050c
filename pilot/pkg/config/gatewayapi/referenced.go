package gatewayapi

import "k8s.io/apimachinery/pkg/types"

// Referenced are the Secrets and ConfigMaps one conversion looked up
// (certificateRefs, infrastructure.parametersRef): exactly those whose
// change can change its outcome. The Kubernetes source converts again on
// a change of these only, so the churn of unrelated Secrets (tokens, Helm
// releases) and ConfigMaps costs no conversion. The zero value refers to
// nothing.
type Referenced struct {
	secrets    map[types.NamespacedName]bool
	configMaps map[types.NamespacedName]bool
}

// Secret reports whether Secret namespace/name was looked up.
func (r Referenced) Secret(namespace, name string) bool {
	return r.secrets[types.NamespacedName{Namespace: namespace, Name: name}]
}

// ConfigMap reports whether ConfigMap namespace/name was looked up.
func (r Referenced) ConfigMap(namespace, name string) bool {
	return r.configMaps[types.NamespacedName{Namespace: namespace, Name: name}]
}

// Len is the number of objects referred to.
func (r Referenced) Len() int { return len(r.secrets) + len(r.configMaps) }

func (r *recorder) referSecret(namespace, name string) {
	if r.referenced.secrets == nil {
		r.referenced.secrets = map[types.NamespacedName]bool{}
	}
	r.referenced.secrets[types.NamespacedName{Namespace: namespace, Name: name}] = true
}

func (r *recorder) referConfigMap(namespace, name string) {
	if r.referenced.configMaps == nil {
		r.referenced.configMaps = map[types.NamespacedName]bool{}
	}
	r.referenced.configMaps[types.NamespacedName{Namespace: namespace, Name: name}] = true
}
