// Package helm tests the Helm chart in manifests/charts/wayfinder: its
// default rendering is the same objects as `kustomize build manifests/base`,
// its options render what they say, and the result is accepted by a real
// API server. It is its own Go module so that Helm's dependencies stay out
// of the main module; `make test` runs it.
package helm

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
)

const (
	chartDir  = "../../manifests/charts/wayfinder"
	baseDir   = "../../manifests/base"
	namespace = "wayfinder-system"
)

var cluster apiserver.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }

// object is one rendered document, parsed.
type object = map[string]any

func key(o object) string {
	u := unstructured.Unstructured{Object: o}
	return fmt.Sprintf("%s/%s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// render renders the chart as `helm install wayfinder -n wayfinder-system`
// would with vals (YAML) over values.yaml, and returns its objects by key
// and their YAML documents in template order.
func render(t *testing.T, vals string) (map[string]object, [][]byte) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	var overrides map[string]any
	if err := yaml.Unmarshal([]byte(vals), &overrides); err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, overrides, chartutil.ReleaseOptions{
		Name: "wayfinder", Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	var names []string
	for name := range out {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	// Namespace first, so that applying in order works.
	slices.SortFunc(names, func(a, b string) int {
		na, nb := strings.HasSuffix(a, "/namespace.yaml"), strings.HasSuffix(b, "/namespace.yaml")
		if na != nb {
			if na {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	objs := map[string]object{}
	var docs [][]byte
	for _, name := range names {
		for _, d := range splitYAML(t, name, out[name]) {
			var o object
			if err := yaml.Unmarshal(d, &o); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, d)
			}
			if len(o) == 0 {
				continue
			}
			if _, dup := objs[key(o)]; dup {
				t.Fatalf("%s: %s rendered twice", name, key(o))
			}
			objs[key(o)] = o
			docs = append(docs, d)
		}
	}
	return objs, docs
}

func splitYAML(t *testing.T, name, s string) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufioReader(s))
	var out [][]byte
	for {
		d, err := r.Read()
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("%s: %v", name, err)
		}
		if strings.TrimSpace(stripComments(string(d))) != "" {
			out = append(out, d)
		}
	}
}

func stripComments(s string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && t != "---" && !strings.HasPrefix(t, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// kustomize builds manifests/base with kustomize's own library, as
// `kubectl apply -k` does.
func kustomize(t *testing.T) map[string]object {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), baseDir)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]object{}
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		// Through YAML, so numbers have the same Go types as the chart's.
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		objs[key(o)] = o
	}
	return objs
}

// The chart's default rendering is the same set of objects, field for
// field, as manifests/base: a change to one must be made to the other.
func TestDefaultRenderMatchesKustomize(t *testing.T) {
	chart, _ := render(t, "")
	base := kustomize(t)
	if len(base) == 0 {
		t.Fatal("kustomize built nothing")
	}
	if diff := cmp.Diff(base, chart); diff != "" {
		t.Errorf("chart defaults differ from manifests/base (-kustomize +chart):\n%s", diff)
	}
}

func container(t *testing.T, objs map[string]object) map[string]any {
	t.Helper()
	d := objs["Deployment/"+namespace+"/pilot-discovery"]
	cs, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("Deployment containers %v", cs)
	}
	return cs[0].(map[string]any)
}

// num reads a number field; YAML numbers decode as float64.
func num(o object, fields ...string) float64 {
	v, _, _ := unstructured.NestedFieldNoCopy(o, fields...)
	f, _ := v.(float64)
	return f
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// Every value renders what it names.
func TestValues(t *testing.T) {
	objs, _ := render(t, `
createNamespace: false
image: {repository: example.com/wf, tag: v9, pullPolicy: Always}
replicaCount: 3
resources: {requests: {cpu: 1, memory: 1Gi}, limits: {memory: 2Gi}}
watchNamespaces: [shop, web]
ingress: {class: nginx, service: gw/edge, disabled: true}
security:
  enabled: true
  plaintextGRPC: false
  tls: {certSecret: wf-tls, clientCASecret: wf-client-ca, sans: [xds.example.com]}
  tokenAudiences: [wayfinder]
  debug: {adminNamespaces: [ops], adminServiceAccounts: [ops/oncall]}
podDisruptionBudget: {enabled: true, minAvailable: 2}
serviceMonitor: {enabled: true, interval: 15s, labels: {release: prom}}
`)
	if _, ok := objs["Namespace//"+namespace]; ok {
		t.Error("createNamespace=false still renders the Namespace")
	}
	c := container(t, objs)
	if c["image"] != "example.com/wf:v9" || c["imagePullPolicy"] != "Always" {
		t.Errorf("image %v %v", c["image"], c["imagePullPolicy"])
	}
	args := strs(c["args"])
	for _, want := range []string{
		"--watch-namespaces=shop,web", "--ingress-class=nginx", "--ingress-service=gw/edge", "--disable-ingress",
		"--tls-cert-file=/etc/wayfinder/tls/tls.crt", "--tls-key-file=/etc/wayfinder/tls/tls.key",
		"--client-ca-file=/etc/wayfinder/client-ca/ca.crt", "--tls-san=xds.example.com", "--token-audiences=wayfinder",
		"--debug-admin-namespaces=ops", "--debug-admin-service-accounts=ops/oncall",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	if hasFlag(args, "--grpc-addr") {
		t.Errorf("plaintextGRPC=false but args %v keep --grpc-addr", args)
	}
	// :15012 is the server's default, as manifests/base relies on.
	if hasFlag(args, "--secure-grpc-addr") {
		t.Errorf("security on but args %v set --secure-grpc-addr", args)
	}
	mounts := fmt.Sprint(c["volumeMounts"])
	if !strings.Contains(mounts, "mountPath:/etc/wayfinder/tls name:tls") || !strings.Contains(mounts, "mountPath:/etc/wayfinder/client-ca name:client-ca") {
		t.Errorf("volumeMounts %v", mounts)
	}
	if mem, _, _ := unstructured.NestedString(c, "resources", "limits", "memory"); mem != "2Gi" {
		t.Errorf("memory limit %q", mem)
	}
	d := objs["Deployment/"+namespace+"/pilot-discovery"]
	if r := num(d, "spec", "replicas"); r != 3 {
		t.Errorf("replicas %v", r)
	}
	vols, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "volumes")
	if len(vols) != 2 || fmt.Sprint(vols) != "[map[name:tls secret:map[secretName:wf-tls]] map[name:client-ca secret:map[secretName:wf-client-ca]]]" {
		t.Errorf("volumes %v", vols)
	}
	// 15010 stays declared (not served without --grpc-addr), as in manifests/base.
	if got, want := servicePorts(t, objs), []string{"grpc-xds:15010", "grpc-xds-tls:15012", "http-monitoring:15014"}; !slices.Equal(got, want) {
		t.Errorf("Service ports %v, want %v", got, want)
	}
	if got, want := containerPorts(t, objs), []string{"grpc-xds:15010", "grpc-xds-tls:15012", "http-monitoring:15014"}; !slices.Equal(got, want) {
		t.Errorf("container ports %v, want %v", got, want)
	}
	cr := fmt.Sprint(objs["ClusterRole//wayfinder-pilot-discovery"]["rules"])
	if !strings.Contains(cr, "tokenreviews") || !strings.Contains(cr, "subjectaccessreviews") {
		t.Errorf("ClusterRole rules lack token and access reviews: %s", cr)
	}
	// A given certificate needs no CA Secret: no access to Secrets, and to
	// ConfigMaps only the mesh config's watch.
	if role := fmt.Sprint(objs["Role/"+namespace+"/wayfinder-pilot-discovery"]["rules"]); strings.Contains(role, "secrets") || strings.Count(role, "configmaps") != 1 || !strings.Contains(role, meshConfigMapRule) {
		t.Errorf("Role with a given certificate: %s", role)
	}
	if m := num(objs["PodDisruptionBudget/"+namespace+"/pilot-discovery"], "spec", "minAvailable"); m != 2 {
		t.Errorf("PodDisruptionBudget minAvailable %v", m)
	}
	sm := objs["ServiceMonitor/"+namespace+"/pilot-discovery"]
	if l, _, _ := unstructured.NestedString(sm, "metadata", "labels", "release"); l != "prom" || !strings.Contains(fmt.Sprint(sm["spec"]), "interval:15s") {
		t.Errorf("ServiceMonitor %v", sm)
	}

	// Self-signed CA (security is on by default): the Role may keep its
	// Secret and ConfigMap; the autoscaler owns the replica count.
	objs, _ = render(t, `
security: {plaintextGRPC: true}
autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 7}
`)
	role := fmt.Sprint(objs["Role/"+namespace+"/wayfinder-pilot-discovery"]["rules"])
	if !strings.Contains(role, "secrets configmaps") || !strings.Contains(role, meshConfigMapRule) {
		t.Errorf("Role with a self-signed CA: %s", role)
	}
	args = strs(container(t, objs)["args"])
	if !slices.Contains(args, "--grpc-addr=:15010") || hasFlag(args, "--tls-cert-file") || hasFlag(args, "--secure-grpc-addr") {
		t.Errorf("self-signed args %v", args)
	}
	if v, found, _ := unstructured.NestedFieldNoCopy(objs["Deployment/"+namespace+"/pilot-discovery"], "spec", "template", "spec", "volumes"); found {
		t.Errorf("self-signed CA mounts volumes %v", v)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(objs["Deployment/"+namespace+"/pilot-discovery"], "spec", "replicas"); found {
		t.Error("replicas set although the HorizontalPodAutoscaler owns it")
	}
	if mx := num(objs["HorizontalPodAutoscaler/"+namespace+"/pilot-discovery"], "spec", "maxReplicas"); mx != 7 {
		t.Errorf("HorizontalPodAutoscaler maxReplicas %v", mx)
	}
}

// meshConfigMapRule is the Role's rule for the mesh config's ConfigMap
// istio, watched as istiod does, with or without security.
const meshConfigMapRule = "resources:[configmaps] verbs:[get list watch]"

// Security off: no secure port, plaintext ADS on 15010, no CA Secret and
// no access reviews, and certificate values ignored; the debug endpoints
// still take tokens, so TokenReviews stay granted.
func TestValuesSecurityOff(t *testing.T) {
	objs, _ := render(t, `
security:
  enabled: false
  tls: {certSecret: wf-tls, clientCASecret: wf-client-ca, sans: [xds.example.com]}
  tokenAudiences: [wayfinder]
  debug: {adminNamespaces: [ops]}
`)
	args := strs(container(t, objs)["args"])
	for _, want := range []string{"--secure-grpc-addr=", "--grpc-addr=:15010", "--debug-admin-namespaces=ops"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	for _, unwanted := range []string{"--tls-cert-file", "--tls-key-file", "--client-ca-file", "--tls-san", "--token-audiences"} {
		if hasFlag(args, unwanted) {
			t.Errorf("security off but args %v have %s", args, unwanted)
		}
	}
	want := []string{"grpc-xds:15010", "http-monitoring:15014"}
	if got := servicePorts(t, objs); !slices.Equal(got, want) {
		t.Errorf("Service ports %v, want %v", got, want)
	}
	if got := containerPorts(t, objs); !slices.Equal(got, want) {
		t.Errorf("container ports %v, want %v", got, want)
	}
	d := objs["Deployment/"+namespace+"/pilot-discovery"]
	if v, found, _ := unstructured.NestedFieldNoCopy(d, "spec", "template", "spec", "volumes"); found {
		t.Errorf("security off mounts volumes %v", v)
	}
	cr := fmt.Sprint(objs["ClusterRole//wayfinder-pilot-discovery"]["rules"])
	if !strings.Contains(cr, "tokenreviews") || strings.Contains(cr, "subjectaccessreviews") {
		t.Errorf("ClusterRole with security off, want tokenreviews and no subjectaccessreviews: %s", cr)
	}
	role := fmt.Sprint(objs["Role/"+namespace+"/wayfinder-pilot-discovery"]["rules"])
	if strings.Contains(role, "secrets") || strings.Count(role, "configmaps") != 1 || !strings.Contains(role, meshConfigMapRule) || !strings.Contains(role, "leases") {
		t.Errorf("Role with security off: %s", role)
	}
}

// hasFlag reports whether args set flag (with or without a value).
func hasFlag(args []string, flag string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
}

func portNames(ports []any, field string) []string {
	var names []string
	for _, p := range ports {
		names = append(names, fmt.Sprintf("%v:%v", p.(map[string]any)["name"], p.(map[string]any)[field]))
	}
	return names
}

func servicePorts(t *testing.T, objs map[string]object) []string {
	t.Helper()
	ports, _, _ := unstructured.NestedSlice(objs["Service/"+namespace+"/pilot-discovery"], "spec", "ports")
	return portNames(ports, "port")
}

func containerPorts(t *testing.T, objs map[string]object) []string {
	t.Helper()
	ports, _ := container(t, objs)["ports"].([]any)
	return portNames(ports, "containerPort")
}

// The default rendering, and one with every option the test API server
// has types for (the ServiceMonitor needs the Prometheus Operator's CRDs),
// are accepted by a real API server: server-side dry run, then for real.
func TestChartAppliesToAPIServer(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, vals := range []string{"", `
security: {plaintextGRPC: true, tls: {certSecret: wf-tls, clientCASecret: wf-client-ca, sans: [xds.example.com]}, tokenAudiences: [wayfinder], debug: {adminNamespaces: [ops]}}
podDisruptionBudget: {enabled: true}
autoscaling: {enabled: true}
watchNamespaces: [default]
`, `
security: {enabled: false}
`} {
		objs, docs := render(t, vals)
		if _, err := c.Apply(ctx, apiserver.ApplyOptions{}, docs[0]); err != nil { // the Namespace
			t.Fatal(err)
		}
		if _, err := c.Apply(ctx, apiserver.ApplyOptions{DryRun: true}, docs...); err != nil {
			t.Fatalf("dry run of %q: %v", vals, err)
		}
		applied, err := c.Apply(ctx, apiserver.ApplyOptions{}, docs...)
		if err != nil {
			t.Fatalf("apply of %q: %v", vals, err)
		}
		if len(applied) != len(objs) {
			t.Errorf("applied %d objects, rendered %d", len(applied), len(objs))
		}
		for _, o := range applied {
			if o.GetUID() == "" {
				t.Errorf("%s %s was not stored", o.GetKind(), o.GetName())
			}
		}
	}
}
