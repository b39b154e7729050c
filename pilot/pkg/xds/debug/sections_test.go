package debug

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
)

// A section renders exactly as the field of debugapi.Configz that reads
// it: /debug/configz is the same JSON whether the Gateway API status is a
// field the server fills or a section the assembly adds; a nil section is
// left out as the field's omitempty leaves it out.
func TestSectionsRenderAsTrailingFields(t *testing.T) {
	render := func(v any) []byte {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, v)
		return rec.Body.Bytes()
	}
	gwz := &debugapi.GatewayAPIz{
		GatewayClasses: []debugapi.GatewayClassz{{Name: "wayfinder", Status: gw.GatewayClassStatus{
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Message: "<ok> & more"}}}}},
		Gateways: []debugapi.Gatewayz{}, Routes: []debugapi.Routez{},
	}
	base := debugapi.Configz{Configs: []debugapi.ConfigzObject{{Kind: "Gateway", Name: "a", Spec: []byte(`{"x":1}`)}},
		Errors: []debugapi.ConfigzError{{Origin: "source", Message: "m"}}}
	withField := base
	withField.GatewayAPI = gwz

	got, err := withSections(base, []Section{{Name: debugapi.GatewayAPISection, Value: func() any { return gwz }}})
	if err != nil {
		t.Fatal(err)
	}
	if want := render(withField); !bytes.Equal(render(got), want) {
		t.Errorf("with a section:\n%s\nwant\n%s", render(got), want)
	}
	got, err = withSections(base, []Section{{Name: "none", Value: func() any { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	if want := render(base); !bytes.Equal(render(got), want) {
		t.Errorf("with a nil section:\n%s\nwant\n%s", render(got), want)
	}
	got, err = withSections(struct{}{}, []Section{{Name: "a", Value: func() any { return 1 }}})
	if err != nil || string(got) != `{"a":1}` {
		t.Errorf("a section of an empty object: %s (%v)", got, err)
	}
}
