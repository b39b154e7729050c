package adsc

import (
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestDecode(t *testing.T) {
	reviews := mustAny(t, edsCluster(reviewsCluster))
	invalid := staticCluster("outbound|1||invalid.default.svc.cluster.local")
	invalid.ConnectTimeout.Seconds = -1
	wrapped := mustAny(t, &discoveryv3.Resource{Name: ratingsCluster, Resource: mustAny(t, edsCluster(ratingsCluster))})
	brokenHCM := httpListener(t, "0.0.0.0_81", 81, route80)
	brokenHCM.FilterChains[0].Filters[0].GetTypedConfig().Value = []byte{0xff, 0xff}
	noPrefix := newHCM(t, route80)
	noPrefix.StatPrefix = "" // stat_prefix is required
	badHCM := httpListener(t, "0.0.0.0_83", 83, route80)
	badHCM.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, noPrefix)}

	tests := []struct {
		name      string
		typeURL   string
		resources []*anypb.Any
		validate  bool
		wantNames []string
		wantErr   []string // substrings; none means success
	}{
		{name: "clusters", typeURL: ClusterType, resources: []*anypb.Any{reviews}, validate: true, wantNames: []string{reviewsCluster}},
		{name: "Resource wrapper is unwrapped", typeURL: ClusterType, resources: []*anypb.Any{wrapped, reviews}, validate: true,
			wantNames: []string{reviewsCluster, ratingsCluster}}, // sorted
		{name: "wrong type", typeURL: ListenerType, resources: []*anypb.Any{reviews}, validate: true,
			wantErr: []string{"LDS resource 0", "does not match"}},
		{name: "duplicate name", typeURL: ClusterType, resources: []*anypb.Any{reviews, reviews}, validate: true,
			wantErr: []string{reviewsCluster, "duplicate"}},
		{name: "empty name", typeURL: ClusterType, resources: []*anypb.Any{mustAny(t, &clusterv3.Cluster{})}, validate: false,
			wantErr: []string{"CDS resource 0: name is empty"}},
		{name: "validation failure names the resource", typeURL: ClusterType, resources: []*anypb.Any{reviews, mustAny(t, invalid)}, validate: true,
			wantErr: []string{invalid.GetName(), "ConnectTimeout"}},
		{name: "validation can be skipped", typeURL: ClusterType, resources: []*anypb.Any{mustAny(t, invalid)}, validate: false,
			wantNames: []string{invalid.GetName()}},
		{name: "undecodable HCM", typeURL: ListenerType, resources: []*anypb.Any{mustAny(t, brokenHCM)}, validate: true,
			wantErr: []string{"0.0.0.0_81", "HttpConnectionManager"}},
		{name: "invalid HCM", typeURL: ListenerType, resources: []*anypb.Any{mustAny(t, badHCM)}, validate: true,
			wantErr: []string{"0.0.0.0_83", "StatPrefix"}},
		{name: "unsupported type", typeURL: resource.SecretType, resources: nil, validate: true,
			wantErr: []string{"not supported"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decode(tc.typeURL, tc.resources, tc.validate)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if !slices.Equal(d.names, tc.wantNames) {
					t.Errorf("names = %v, want %v", d.names, tc.wantNames)
				}
				return
			}
			if err == nil {
				t.Fatalf("decode succeeded, want an error with %q", tc.wantErr)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestEDSNames(t *testing.T) {
	withService := edsCluster(ratingsCluster)
	withService.EdsClusterConfig.ServiceName = "ratings-eds"
	clusters := map[string]*clusterv3.Cluster{
		reviewsCluster:   edsCluster(reviewsCluster),
		ratingsCluster:   withService,
		"static":         staticCluster("static"),
		"reviews-second": edsCluster(reviewsCluster), // same EDS name twice
	}
	got := edsNames(clusters)
	want := []string{reviewsCluster, "ratings-eds"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("edsNames = %v, want %v", got, want)
	}
}

func TestRDSNames(t *testing.T) {
	withDefault := httpListener(t, listener8080, 8080, route8080)
	withDefault.DefaultFilterChain = &listenerv3.FilterChain{Filters: []*listenerv3.Filter{hcmFilter(t, "http.default")}}
	tcp := &listenerv3.Listener{Name: "tcp", Address: socket("0.0.0.0", 9000), FilterChains: []*listenerv3.FilterChain{{
		Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.tcp_proxy"}},
	}}}
	listeners := map[string]*listenerv3.Listener{
		listener80:   httpListener(t, listener80, 80, route80),
		listener8080: withDefault,
		"tcp":        tcp,
		"again":      httpListener(t, "again", 81, route80),
	}
	got := rdsNames(listeners)
	want := []string{route80, route8080, "http.default"} // sorted
	if !slices.Equal(got, want) {
		t.Errorf("rdsNames = %v, want %v", got, want)
	}
}
