package listener

import (
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// Every mesh config value maps as istiod's
// MeshConfigToEnvoyForwardClientCertDetails (Envoy's enum is the mesh's
// shifted by UNDEFINED), and UNDEFINED is istiod's gateway default.
func TestForwardClientCertDetailsMapping(t *testing.T) {
	for v := range meshconfig.ForwardClientCertDetails_name {
		mv := meshconfig.ForwardClientCertDetails(v)
		want := hcmv3.HttpConnectionManager_ForwardClientCertDetails(v - 1)
		if mv == meshconfig.ForwardClientCertDetails_UNDEFINED {
			want = hcmv3.HttpConnectionManager_SANITIZE_SET
		}
		if got := ForwardClientCertDetails(mv); got != want || got.String() != map[bool]string{true: "SANITIZE_SET", false: mv.String()}[v == 0] {
			t.Errorf("%s -> %s, want %s", mv, got, want)
		}
	}
}

// set_current_client_cert_details only in the two modes Envoy reads it in,
// as istiod's buildGatewayConnectionManager.
func TestClientCertDetailsOnlyWhereEnvoyReadsThem(t *testing.T) {
	for v := range meshconfig.ForwardClientCertDetails_name {
		mv := meshconfig.ForwardClientCertDetails(v)
		cm := ConnectionManager(80, model.GatewayTopology{ForwardClientCertDetails: mv}, nil)
		if err := cm.ValidateAll(); err != nil {
			t.Fatalf("%s: %v", mv, err)
		}
		fcc := cm.GetForwardClientCertDetails()
		want := fcc == hcmv3.HttpConnectionManager_APPEND_FORWARD || fcc == hcmv3.HttpConnectionManager_SANITIZE_SET
		d := cm.GetSetCurrentClientCertDetails()
		if got := d != nil; got != want {
			t.Errorf("%s: set_current_client_cert_details %v, want set: %v", mv, d, want)
		}
		if want && (!d.GetSubject().GetValue() || !d.GetCert() || !d.GetUri() || !d.GetDns() || d.GetChain()) {
			t.Errorf("%s: details %v, want subject, cert, uri and dns (istiod's)", mv, d)
		}
	}
}
