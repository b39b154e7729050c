package protoconv

import (
	"bytes"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
)

func TestAnyIsDeterministicAndRoundTrips(t *testing.T) {
	m := &routev3.Route{Name: "r", Metadata: nil, TypedPerFilterConfig: nil}
	for i := range 20 {
		m.RequestHeadersToRemove = append(m.RequestHeadersToRemove, string(rune('a'+i)))
	}
	a, err := Any(m)
	if err != nil {
		t.Fatal(err)
	}
	if a.TypeUrl != "type.googleapis.com/envoy.config.route.v3.Route" {
		t.Errorf("type URL %q", a.TypeUrl)
	}
	b, _ := Any(m)
	if !bytes.Equal(a.Value, b.Value) {
		t.Error("two packings of one message differ")
	}
	var back routev3.Route
	if err := a.UnmarshalTo(&back); err != nil || !proto.Equal(&back, m) {
		t.Errorf("unpacked %v (err %v), want %v", &back, err, m)
	}
}

func TestValidatedAnyRefusesInvalid(t *testing.T) {
	// A redirect with a response code out of the enum is invalid.
	bad := &routev3.RedirectAction{ResponseCode: 99}
	if _, err := ValidatedAny(bad); err == nil {
		t.Fatal("ValidatedAny packed an invalid message")
	}
	if _, err := ValidatedAny(&routev3.RedirectAction{}); err != nil {
		t.Fatalf("valid message refused: %v", err)
	}
}
