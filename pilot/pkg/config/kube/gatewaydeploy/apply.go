package gatewaydeploy

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

func jsonOf(m map[string]any) ([]byte, error) { return json.Marshal(m) }

// applyMap is the server-side apply body of a rendered object: the
// object without status and without the null and empty fields Go's types
// carry (creationTimestamp, strategy), so the deployer owns only what it
// sets.
func applyMap(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	return prune(m).(map[string]any), nil
}

// prune drops null values and empty objects (a Deployment's strategy:
// the deployer leaves it to the API server's default), recursively; an
// emptyDir volume is empty and meant.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			t[k] = prune(x)
			if m, ok := t[k].(map[string]any); ok && len(m) == 0 && k != "emptyDir" {
				delete(t, k)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = prune(x)
		}
	}
	return v
}

// upToDate reports whether the object in the cluster (cur) holds every
// field the deployer applies (want) with the same value: what the API
// server or others added (defaults, status, other fields) is ignored,
// while a field of ours changed or removed by someone else is drift, and
// is applied again.
func upToDate(cur runtime.Object, want map[string]any) bool {
	c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return false
	}
	w := make(map[string]any, len(want))
	for k, v := range want {
		if k != "apiVersion" && k != "kind" { // cached objects carry no TypeMeta
			w[k] = v
		}
	}
	return contains(c, w)
}

func contains(cur, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		c, ok := cur.(map[string]any)
		if !ok {
			return len(w) == 0 && cur == nil
		}
		for k, v := range w {
			if !contains(c[k], v) {
				return false
			}
		}
		return true
	case []any:
		c, ok := cur.([]any)
		if !ok || len(c) != len(w) {
			return false
		}
		for i := range w {
			if !contains(c[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(cur, want)
}
