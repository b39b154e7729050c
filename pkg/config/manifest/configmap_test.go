package manifest_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// A v1 ConfigMap document is read (for BackendTLSPolicy CAs) with the
// default namespace; one with an unknown field is refused by field and
// object, and its data never appears in the error.
func TestParseConfigMap(t *testing.T) {
	objs, errs := manifest.ParseAll("ca.yaml", []byte(`
apiVersion: v1
kind: ConfigMap
metadata: {name: ca}
data: {ca.crt: "PEM"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bad, namespace: x}
data: {ca.crt: "SECRETISH"}
extra: 1
`), manifest.Options{})
	if len(objs.GatewayAPI) != 1 || objs.GatewayAPI[0].Kind.Name != "ConfigMap" {
		t.Fatalf("objects %+v, want one ConfigMap", objs.GatewayAPI)
	}
	cm, ok := objs.GatewayAPI[0].Object.(*corev1.ConfigMap)
	if !ok || cm.Namespace != "default" || cm.Data["ca.crt"] != "PEM" {
		t.Errorf("ConfigMap %+v", objs.GatewayAPI[0].Object)
	}
	if len(errs) != 1 || errs[0].Field != "extra" || !strings.Contains(errs[0].Message, "ConfigMap x/bad") ||
		strings.Contains(errs[0].Error(), "SECRETISH") {
		t.Errorf("errors %v, want one naming field extra and ConfigMap x/bad, without the data", errs)
	}
}

// A ConfigMap document larger than the API server would store is refused
// by object and field, without its data, and is not kept.
func TestParseConfigMapTooLarge(t *testing.T) {
	big := strings.Repeat("A", manifest.MaxConfigMapBytes)
	objs, errs := manifest.ParseAll("big.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: "+big+"}\n"), manifest.Options{})
	if len(objs.GatewayAPI) != 0 {
		t.Errorf("a ConfigMap over %d bytes was kept", manifest.MaxConfigMapBytes)
	}
	if len(errs) != 1 || errs[0].Field != "data" || !strings.Contains(errs[0].Message, "ConfigMap default/big") ||
		strings.Contains(errs[0].Error(), "AAAA") {
		t.Errorf("errors %v, want one naming field data and ConfigMap default/big, without the data", errs)
	}
}
