package xds

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
)

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildXDSObjectFromStruct(t *testing.T) {
	value := mustStruct(t, map[string]any{
		"name": "envoy.filters.http.local_ratelimit",
		"typed_config": map[string]any{
			"@type":       "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
			"stat_prefix": "rl",
		},
		"not_a_field": true,
	})
	m, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_HTTP_FILTER, value, false)
	if err != nil {
		t.Fatalf("non-strict: %v", err)
	}
	if f := m.(*hcmv3.HttpFilter); f.GetName() != "envoy.filters.http.local_ratelimit" || f.GetTypedConfig() == nil {
		t.Errorf("built %v", f)
	}
	_, err = BuildXDSObjectFromStruct(networking.EnvoyFilter_HTTP_FILTER, value, true)
	if err == nil || err.Error() != `unknown field "not_a_field"` {
		t.Errorf("strict: got %v, want the unknown field, without protobuf-go's decorations", err)
	}
	if m, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_HTTP_FILTER, nil, true); m != nil || err != nil {
		t.Errorf("nil value (REMOVE): got %v, %v", m, err)
	}
	if _, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_BOOTSTRAP, value, false); err == nil {
		t.Errorf("BOOTSTRAP: no error")
	}
	unknown := mustStruct(t, map[string]any{"typed_config": map[string]any{"@type": "type.googleapis.com/no.such.Type"}})
	if _, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_NETWORK_FILTER, unknown, false); err == nil ||
		!strings.Contains(err.Error(), "no.such.Type") || strings.Contains(err.Error(), "line") {
		t.Errorf("unknown @type: got %v", err)
	}
}

// Durations in Go's notation, as istiod's decoder reads them: in the
// patch value itself, inside an Any's typed config, and inside a
// TypedStruct's value; a malformed one names its field.
func TestGoDurations(t *testing.T) {
	v, err := structpb.NewStruct(map[string]any{
		"name":             "c",
		"dns_refresh_rate": "500ms",
		"typed_extension_protocol_options": map[string]any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": map[string]any{
				"@type":                        "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
				"common_http_protocol_options": map[string]any{"idle_timeout": "1m30s"},
				"explicit_http_config":         map[string]any{"http2_protocol_options": map[string]any{}},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_CLUSTER, v, true)
	if err != nil {
		t.Fatal(err)
	}
	c := m.(*clusterv3.Cluster)
	if c.GetDnsRefreshRate().AsDuration() != 500*time.Millisecond {
		t.Errorf("dns_refresh_rate %v", c.GetDnsRefreshRate())
	}
	opts := &httpv3.HttpProtocolOptions{}
	if err := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(opts); err != nil ||
		opts.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration() != 90*time.Second {
		t.Errorf("idle_timeout inside the Any: %v %v", opts, err)
	}

	ts, err := structpb.NewStruct(map[string]any{"name": "envoy.filters.http.local_ratelimit", "typed_config": map[string]any{
		"@type":    "type.googleapis.com/udpa.type.v1.TypedStruct",
		"type_url": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
		"value":    map[string]any{"stat_prefix": "rl", "token_bucket": map[string]any{"max_tokens": 1, "fill_interval": "250ms"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_HTTP_FILTER, ts, true); err != nil {
		t.Errorf("a Go duration inside a TypedStruct: %v", err)
	}
	bad, _ := structpb.NewStruct(map[string]any{"name": "c", "connect_timeout": "soon"})
	if _, err := BuildXDSObjectFromStruct(networking.EnvoyFilter_CLUSTER, bad, true); err == nil || !strings.Contains(err.Error(), "connect_timeout") {
		t.Errorf("a malformed duration: %v, want its field named", err)
	}
}
