package manifest

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest/internal/crdschema"
)

// crdsDir is where the experimental-channel Gateway API CRDs users apply
// live; the embedded schemas are generated from them.
const crdsDir = "../../../manifests/crds/gateway-api-experimental"

// The embedded schemas are what `go generate` writes from the CRDs today:
// a refreshed CRD (make gateway-api-crds) without a regenerate fails here.
func TestGatewayAPISchemasUpToDate(t *testing.T) {
	want, err := crdschema.Generate(crdsDir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gatewayAPISchemasJSON, want) {
		t.Fatalf("gatewayapi_schemas.json is stale against %s: run `go generate ./pkg/config/manifest`", crdsDir)
	}
}

// Pruning keeps everything the check reads: each embedded schema decodes
// to exactly what the CRD's full schema decodes to.
func TestGatewayAPISchemasMatchCRDs(t *testing.T) {
	full, err := crdschema.Specs(crdsDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeGatewayAPISchemas(gatewayAPISchemasJSON)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(full)); !slices.Equal(g, w) {
		t.Fatalf("embedded schemas for %v, CRDs serve %v", g, w)
	}
	for _, k := range []string{"GatewayClass/v1", "Gateway/v1", "HTTPRoute/v1", "GRPCRoute/v1", "ReferenceGrant/v1beta1",
		"ListenerSet/v1", "BackendTLSPolicy/v1"} {
		if got[k] == nil {
			t.Errorf("no embedded schema for %s", k)
		}
	}
	for k, raw := range full {
		var want openAPISchema
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if !reflect.DeepEqual(got[k], &want) {
			t.Errorf("%s: the embedded schema differs from the CRD's", k)
		}
	}
}
