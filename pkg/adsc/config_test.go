package adsc

import (
	"maps"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

func TestIstioNode(t *testing.T) {
	tests := []struct {
		name    string
		opts    NodeOptions
		wantID  string
		want    model.Proxy
		wantRaw map[string]string // further string metadata
	}{
		{
			name:   "gateway defaults",
			opts:   NodeOptions{PodName: "gw-1", Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}},
			wantID: "router~10.0.0.1~gw-1.istio-system~istio-system.svc.cluster.local",
			want: model.Proxy{Type: model.Router, IPAddress: "10.0.0.1", PodName: "gw-1", Namespace: "istio-system",
				DNSDomain: "istio-system.svc.cluster.local", Labels: map[string]string{"istio": "ingressgateway"}, ClusterID: "Kubernetes"},
		},
		{
			name: "everything set",
			opts: NodeOptions{Type: "sidecar", IP: "10.4.0.7", PodName: "reviews-v1-abc", Namespace: "default",
				DNSDomain: "default.svc.example.org", ClusterID: "east", Labels: map[string]string{"app": "reviews", "version": "v1"},
				Metadata: map[string]string{"ISTIO_VERSION": "1.31.1", "NAMESPACE": "ignored"}},
			wantID: "sidecar~10.4.0.7~reviews-v1-abc.default~default.svc.example.org",
			want: model.Proxy{Type: model.Sidecar, IPAddress: "10.4.0.7", PodName: "reviews-v1-abc", Namespace: "default",
				DNSDomain: "default.svc.example.org", Labels: map[string]string{"app": "reviews", "version": "v1"}, ClusterID: "east"},
			wantRaw: map[string]string{"ISTIO_VERSION": "1.31.1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodeID(tc.opts); got != tc.wantID {
				t.Errorf("NodeID = %q, want %q", got, tc.wantID)
			}
			node := IstioNode(tc.opts)
			if node.GetId() != tc.wantID || node.GetUserAgentName() != "envoy" {
				t.Errorf("node id %q user agent %q", node.GetId(), node.GetUserAgentName())
			}
			p, err := model.ParseProxy(node)
			if err != nil {
				t.Fatalf("ParseProxy: %v", err)
			}
			tc.want.ID = tc.wantID
			if p.ID != tc.want.ID || p.Type != tc.want.Type || p.IPAddress != tc.want.IPAddress || p.PodName != tc.want.PodName ||
				p.Namespace != tc.want.Namespace || p.DNSDomain != tc.want.DNSDomain || p.ClusterID != tc.want.ClusterID ||
				!maps.Equal(p.Labels, tc.want.Labels) {
				t.Errorf("ParseProxy = %+v, want %+v", *p, tc.want)
			}
			md := node.GetMetadata().GetFields()
			for k, v := range tc.wantRaw {
				if got := md[k].GetStringValue(); got != v {
					t.Errorf("metadata %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
