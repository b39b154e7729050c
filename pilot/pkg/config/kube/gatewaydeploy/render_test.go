package gatewaydeploy

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/apimachinery/pkg/runtime"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml and delete goldens whose input is gone")

const testRoot = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func testOptions() Options {
	return Options{XDSAddress: "pilot-discovery.wayfinder-system.svc:15012", RootCertPEM: []byte(testRoot)}
}

func readGateway(t *testing.T, data []byte) *gw.Gateway {
	t.Helper()
	var g gw.Gateway
	if err := yaml.UnmarshalStrict(data, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// The rendered objects of each testdata Gateway, as applied (server-side
// apply bodies), or the error refusing it.
func TestRenderGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		objs, err := Render(readGateway(t, data), testOptions())
		var b bytes.Buffer
		if err != nil {
			golden.WriteYAML(t, &b, "error", err.Error())
			return b.Bytes()
		}
		var out []map[string]any
		for _, o := range objs.List() {
			m, err := applyMap(o)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		golden.WriteYAML(t, &b, "objects", out)
		return b.Bytes()
	})
}

// The bootstrap in the ConfigMap is a valid v3 Bootstrap dialling the
// secure port with the projected token, verified against the root
// certificate of the same ConfigMap, with Istio's node metadata; the
// Deployment gives Envoy Istio's node ID from the downward API.
func TestRenderedBootstrap(t *testing.T) {
	g := readGateway(t, []byte(`{metadata: {name: edge, namespace: edge-ns}, spec: {gatewayClassName: wayfinder, listeners: [{name: http, port: 80, protocol: HTTP}]}}`))
	objs, err := Render(g, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if objs.ConfigMap.Data[rootCertFile] != testRoot {
		t.Errorf("root certificate %q not in the ConfigMap", objs.ConfigMap.Data[rootCertFile])
	}
	j, err := yaml.YAMLToJSON([]byte(objs.ConfigMap.Data[bootstrapFile]))
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatalf("not an Envoy v3 Bootstrap: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	md := b.GetNode().GetMetadata().AsMap()
	labels, _ := md["LABELS"].(map[string]any)
	if md["NAMESPACE"] != "edge-ns" || md["CLUSTER_ID"] != "Kubernetes" || labels[gatewayapi.GatewayNameLabel] != "edge" {
		t.Errorf("node metadata %v, want NAMESPACE edge-ns, CLUSTER_ID Kubernetes, LABELS with %s: edge", md, gatewayapi.GatewayNameLabel)
	}
	ggrpc := b.GetDynamicResources().GetAdsConfig().GetGrpcServices()[0].GetGoogleGrpc()
	if ggrpc.GetTargetUri() != "pilot-discovery.wayfinder-system.svc:15012" {
		t.Errorf("ADS target %q", ggrpc.GetTargetUri())
	}
	if f := ggrpc.GetChannelCredentials().GetSslCredentials().GetRootCerts().GetFilename(); f != configDir+"/"+rootCertFile {
		t.Errorf("root certificate file %q", f)
	}
	// Every file the bootstrap names is mounted.
	pod := objs.Deployment.Spec.Template.Spec
	mounted := map[string]bool{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounted[m.MountPath] = true
	}
	if !mounted[configDir] || !mounted[tokenDir] {
		t.Errorf("mounts %v, want %s and %s", pod.Containers[0].VolumeMounts, configDir, tokenDir)
	}
	if pod.Volumes[1].Projected.Sources[0].ServiceAccountToken.Audience != "wayfinder" || pod.ServiceAccountName != "edge-wayfinder" {
		t.Errorf("token %+v of %q, want audience wayfinder of edge-wayfinder", pod.Volumes[1].Projected, pod.ServiceAccountName)
	}
	args := strings.Join(pod.Containers[0].Args, " ")
	if !strings.Contains(args, "--service-node router~$(POD_IP)~$(POD_NAME).$(POD_NAMESPACE)~$(POD_NAMESPACE).svc.cluster.local") {
		t.Errorf("args %q lack Istio's node ID", args)
	}
	// The pod carries the label the converted Istio Gateway selects.
	if pod := objs.Deployment.Spec.Template.Labels; pod[gatewayapi.GatewayNameLabel] != "edge" {
		t.Errorf("pod labels %v", pod)
	}
	// Without a root certificate the system roots verify Wayfinder.
	opts := testOptions()
	opts.RootCertPEM = nil
	objs, err = Render(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objs.ConfigMap.Data[rootCertFile]; ok || !strings.Contains(objs.ConfigMap.Data[bootstrapFile], systemRoots) {
		t.Errorf("without a root certificate: ConfigMap %v", objs.ConfigMap.Data)
	}
}

// A new bootstrap changes the pod template, so the pods roll; the same
// one does not.
func TestBootstrapHashRollsPods(t *testing.T) {
	g := readGateway(t, []byte(`{metadata: {name: edge, namespace: ns}, spec: {gatewayClassName: c, listeners: [{name: http, port: 80, protocol: HTTP}]}}`))
	hash := func(o Options) string {
		objs, err := Render(g, o)
		if err != nil {
			t.Fatal(err)
		}
		return objs.Deployment.Spec.Template.Annotations[BootstrapHashAnnotation]
	}
	a, b := hash(testOptions()), hash(testOptions())
	o := testOptions()
	o.ClusterID = "other"
	if a == "" || a != b || a == hash(o) {
		t.Errorf("hashes %q %q %q: want equal for the same bootstrap, different for another", a, b, hash(o))
	}
}

// A name over 63 characters cannot be a Service: refused, naming the
// Gateway.
func TestRenderRefusesLongNames(t *testing.T) {
	g := readGateway(t, []byte(`{metadata: {name: `+strings.Repeat("g", 60)+`, namespace: ns}, spec: {gatewayClassName: wayfinder}}`))
	if _, err := Render(g, testOptions()); err == nil || !strings.Contains(err.Error(), "ns/") {
		t.Errorf("error %v, want one naming the Gateway", err)
	}
}

// upToDate ignores what the API server adds and sees drift in what the
// deployer sets.
func TestUpToDate(t *testing.T) {
	g := readGateway(t, []byte(`{metadata: {name: edge, namespace: ns}, spec: {gatewayClassName: c, listeners: [{name: http, port: 80, protocol: HTTP}]}}`))
	objs, err := Render(g, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	want, err := applyMap(objs.Deployment)
	if err != nil {
		t.Fatal(err)
	}
	cur := objs.Deployment.DeepCopy()
	cur.TypeMeta.Kind, cur.ResourceVersion, cur.Spec.Replicas = "", "12", ptr(int32(3))
	cur.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	cur.Status.ReadyReplicas = 1
	if !upToDate(cur, want) {
		t.Error("defaults, replicas and status count as drift")
	}
	cur.Spec.Template.Spec.Containers[0].Image = "example.com/envoy:old"
	if upToDate(cur, want) {
		t.Error("a changed image is not drift")
	}
	svc, _ := applyMap(objs.Service)
	var missing runtime.Object = objs.Service.DeepCopy()
	missing.(interface{ SetLabels(map[string]string) }).SetLabels(nil)
	if upToDate(missing, svc) {
		t.Error("removed labels are not drift")
	}
}
