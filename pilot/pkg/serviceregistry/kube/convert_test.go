package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestProtocolFromAppProtocolThenPortName(t *testing.T) {
	cases := []struct {
		name, app, want string
	}{
		{"http", "", "HTTP"},
		{"http-web", "", "HTTP"},
		{"HTTP2-x", "", "HTTP2"},
		{"grpc", "", "GRPC"},
		{"grpc-web", "", "GRPC"},
		{"https-admin", "", "HTTPS"},
		{"tls", "", "TLS"},
		{"tcp-db", "", "TCP"},
		{"redis", "", "TCP"},
		{"", "", "TCP"},
		{"web", "", "TCP"},
		{"web", "http", "HTTP"},
		{"http", "kubernetes.io/h2c", "HTTP2"},
		{"tcp", "grpc", "GRPC"},
		{"grpc", "something/unknown", "GRPC"},
	}
	for _, c := range cases {
		p := corev1.ServicePort{Name: c.name}
		if c.app != "" {
			p.AppProtocol = ptr.To(c.app)
		}
		if got := Protocol(p); got != c.want {
			t.Errorf("Protocol(name %q, appProtocol %q) = %q, want %q", c.name, c.app, got, c.want)
		}
	}
}

func service(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
	svc := objects.Service(ns, name, ports...)
	svc.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	svc.Spec.ClusterIP = "10.0.0.1"
	return svc
}

func endpoint(ip, pod string, ready, serving, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(serving), Terminating: ptr.To(terminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: pod},
	}
}

func TestBuildServicePortsEndpointsLabelsAndLocality(t *testing.T) {
	svc := service("default", "reviews",
		corev1.ServicePort{Name: "http", Port: 9080, TargetPort: intstr.FromString("web")},
		corev1.ServicePort{Name: "grpc-api", Port: 9090, TargetPort: intstr.FromInt32(9091)},
		corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
	)
	ports := []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, {Name: ptr.To("grpc-api"), Port: ptr.To[int32](9091)}}
	ready := endpoint("10.1.0.2", "reviews-v1", true, true, false)
	ready.Zone = ptr.To("zone-a")
	unsetReady := discoveryv1.Endpoint{Addresses: []string{"10.1.0.9"}} // no conditions: ready
	es := []*discoveryv1.EndpointSlice{
		objects.EndpointSlice("default", "reviews", "reviews-a", ports,
			ready,
			endpoint("10.1.0.3", "reviews-v2", false, true, true),   // serving but terminating: left out
			endpoint("10.1.0.4", "reviews-v3", false, false, false), // not ready
			unsetReady,
		),
		objects.EndpointSlice("default", "reviews", "reviews-b", ports, endpoint("10.1.0.2", "reviews-v1", true, true, false)), // duplicate address
	}
	pods := map[string]*podInfo{"default/reviews-v1": {labels: map[string]string{"version": "v1"}}}
	got, refs := buildService(svc, es, "cluster.local", func(ns, name string) *podInfo { return pods[ns+"/"+name] })

	if got.Hostname != "reviews.default.svc.cluster.local" || got.Namespace != "default" || got.Resolution != model.ClientSideLB {
		t.Fatalf("service = %+v", got)
	}
	if got.Source != ServiceKey("default", "reviews.default.svc.cluster.local") || !got.CreationTimestamp.Equal(svc.CreationTimestamp.Time) {
		t.Errorf("source/creation = %v %v", got.Source, got.CreationTimestamp)
	}
	wantPorts := []model.Port{{Name: "http", Number: 9080, Protocol: "HTTP"}, {Name: "grpc-api", Number: 9090, Protocol: "GRPC", TargetPort: 9091}}
	if len(got.Ports) != 2 || got.Ports[0] != wantPorts[0] || got.Ports[1] != wantPorts[1] {
		t.Fatalf("ports = %+v, want %+v (UDP dropped)", got.Ports, wantPorts)
	}
	if len(got.Endpoints) != 2 {
		t.Fatalf("endpoints = %d, want the ready one and the one with no conditions", len(got.Endpoints))
	}
	ep := got.Endpoints[0]
	if ep.Address != "10.1.0.2" || ep.Labels["version"] != "v1" || ep.Locality != "/zone-a" {
		t.Errorf("endpoint = %+v", ep)
	}
	// The named target port resolves through the slice's port numbers.
	if n := ep.PortFor(got.Ports[0]); n != 8080 {
		t.Errorf("http endpoint port = %d, want 8080 (named target port from the slice)", n)
	}
	if n := ep.PortFor(got.Ports[1]); n != 9091 {
		t.Errorf("grpc endpoint port = %d, want 9091", n)
	}
	if got.Endpoints[1].Address != "10.1.0.9" || got.Endpoints[1].Labels != nil {
		t.Errorf("second endpoint = %+v", got.Endpoints[1])
	}
	if want := []string{"default/reviews-v1", "default/reviews-v2", "default/reviews-v3"}; len(refs) != 3 || refs[0] != want[0] || refs[2] != want[2] {
		t.Errorf("pod refs = %q, want %q (not-ready pods are tracked too)", refs, want)
	}
	// The result shares no labels map with the pod cache.
	ep.Labels["version"] = "changed"
	if pods["default/reviews-v1"].labels["version"] != "v1" {
		t.Error("endpoint labels alias the pod's")
	}
}

func TestBuildServiceNumericTargetPortWithoutSliceAndExternalName(t *testing.T) {
	svc := service("ns", "plain", corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)})
	got, _ := buildService(svc, nil, "example.local", func(string, string) *podInfo { return nil })
	if got.Hostname != "plain.ns.svc.example.local" || got.Ports[0].TargetPort != 8080 || len(got.Endpoints) != 0 {
		t.Fatalf("service = %+v", got)
	}
	ext := service("ns", "ext", corev1.ServicePort{Name: "https", Port: 443})
	ext.Spec.Type = corev1.ServiceTypeExternalName
	ext.Spec.ExternalName = "api.example.com"
	got, _ = buildService(ext, nil, "cluster.local", func(string, string) *podInfo { return nil })
	if got.Resolution != model.DNSLB || len(got.Endpoints) != 1 || got.Endpoints[0].Address != "api.example.com" || got.Ports[0].Protocol != "HTTPS" {
		t.Fatalf("ExternalName service = %+v", got)
	}
}

func TestSameShapeAndSameEndpoints(t *testing.T) {
	a := &model.Service{Hostname: "h", Ports: []model.Port{{Name: "http", Number: 80, Protocol: "HTTP"}},
		Endpoints: []*model.Endpoint{{Address: "1.1.1.1", Labels: map[string]string{"v": "1"}}}}
	b := *a
	b.Endpoints = []*model.Endpoint{{Address: "1.1.1.1", Labels: map[string]string{"v": "2"}}}
	if !sameShape(a, &b) || sameEndpoints(a.Endpoints, b.Endpoints) {
		t.Error("a label change is an endpoints-only change")
	}
	c := b
	c.Ports = []model.Port{{Name: "http", Number: 81, Protocol: "HTTP"}}
	if sameShape(a, &c) {
		t.Error("a port change is a shape change")
	}
	if !sameEndpoints(a.Endpoints, []*model.Endpoint{{Address: "1.1.1.1", Labels: map[string]string{"v": "1"}}}) {
		t.Error("equal endpoints compare unequal")
	}
}

// Deletes the informer missed arrive as tombstones; the registry reads
// state from the caches, so all it needs from one is which service to
// recompute.
func TestTombstonesNameTheirObject(t *testing.T) {
	es := objects.EndpointSlice("default", "reviews", "reviews-abc", nil)
	if keys, _ := sliceServiceKey(es); len(keys) != 1 || keys[0] != "default/reviews" {
		t.Fatalf("sliceServiceKey = %v", keys)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "default/reviews-v1", Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "reviews-v1"}}}
	if k, ok := objectKey(tomb); !ok || k != "default/reviews-v1" {
		t.Fatalf("objectKey(tombstone) = %q, %v", k, ok)
	}
	if k, ok := objectKey(service("ns", "svc")); !ok || k != "ns/svc" {
		t.Fatalf("objectKey(service) = %q, %v", k, ok)
	}
	if keys, _ := sliceServiceKey(&discoveryv1.EndpointSlice{}); keys != nil {
		t.Fatalf("a slice without a service label indexed as %v", keys)
	}
}

func TestStripPodKeepsIdentityAndLabels(t *testing.T) {
	in := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "3", Labels: map[string]string{"a": "b"},
		Annotations: map[string]string{"big": "x"}}, Spec: corev1.PodSpec{NodeName: "n"}}
	out, err := stripPod(in)
	p := out.(*corev1.Pod)
	if err != nil || p.Name != "p" || p.Namespace != "ns" || p.ResourceVersion != "3" || p.Labels["a"] != "b" || p.Annotations != nil || p.Spec.NodeName != "" {
		t.Fatalf("stripPod = %+v, %v", p, err)
	}
}
