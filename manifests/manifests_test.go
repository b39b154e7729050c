package manifests_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/manifests"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
)

var cluster apiserver.Shared

func TestMain(m *testing.M) {
	code := cluster.Run(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Every YAML file in crds/ and base/ is listed by its kustomization.yaml,
// every listed file exists, and the top level takes in both folders: so
// `kubectl apply -k manifests/` installs everything there is.
func TestKustomizationsListEveryFile(t *testing.T) {
	top, err := manifests.KustomizationResources(".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(top, []string{"crds", "base"}) {
		t.Fatalf("manifests/kustomization.yaml lists %v, want [crds base]", top)
	}
	for _, dir := range top {
		listed, err := manifests.KustomizationResources(dir)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := fs.ReadDir(manifests.FS, dir)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".yaml") && n != "kustomization.yaml" {
				files = append(files, n)
			}
		}
		sortedListed := slices.Sorted(slices.Values(listed))
		if !slices.Equal(sortedListed, files) {
			t.Errorf("%s/kustomization.yaml lists %v; the folder holds %v", dir, sortedListed, files)
		}
	}
}

// strictDecoder decodes with client-go's types and refuses unknown or
// duplicate fields, as `kubectl apply --validate=strict` would.
var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

func decodeBase(t *testing.T) map[string]runtime.Object {
	t.Helper()
	docs, err := manifests.Base()
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]runtime.Object{}
	for _, d := range docs {
		obj, gvk, err := strictDecoder.Decode(d.YAML, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		m, err := metav1Object(obj)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		key := gvk.Kind + "/" + m.GetName()
		if _, dup := objs[key]; dup {
			t.Fatalf("%s: %s defined twice", d, key)
		}
		if m.GetLabels()["app.kubernetes.io/part-of"] != "wayfinder" {
			t.Errorf("%s: %s lacks label app.kubernetes.io/part-of=wayfinder", d, key)
		}
		objs[key] = obj
	}
	return objs
}

func metav1Object(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

const namespace = "wayfinder-system"

// The base objects parse with the real API types, and are what the
// Deployment needs: each is there once, namespaced objects live in
// wayfinder-system.
func TestBaseParsesWithRealTypes(t *testing.T) {
	objs := decodeBase(t)
	var keys []string
	for k, o := range objs {
		keys = append(keys, k)
		m, _ := metav1Object(o)
		switch o.(type) {
		case *corev1.Namespace, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			if m.GetNamespace() != "" {
				t.Errorf("%s is cluster-scoped but names namespace %q", k, m.GetNamespace())
			}
		default:
			if m.GetNamespace() != namespace {
				t.Errorf("%s is in namespace %q, want %s", k, m.GetNamespace(), namespace)
			}
		}
	}
	slices.Sort(keys)
	want := []string{
		"ClusterRole/wayfinder-gateway-deployer", "ClusterRole/wayfinder-pilot-discovery",
		"ClusterRoleBinding/wayfinder-gateway-deployer", "ClusterRoleBinding/wayfinder-pilot-discovery",
		"Deployment/pilot-discovery", "Namespace/wayfinder-system", "PodDisruptionBudget/pilot-discovery", "Role/wayfinder-pilot-discovery",
		"RoleBinding/wayfinder-pilot-discovery", "Service/pilot-discovery", "ServiceAccount/pilot-discovery",
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("base holds %v, want %v", keys, want)
	}

	d := objs["Deployment/pilot-discovery"].(*appsv1.Deployment)
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "pilot-discovery" {
		t.Errorf("Deployment runs as ServiceAccount %q, want pilot-discovery", pod.ServiceAccountName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, "wayfinder/pilot-discovery:") {
		t.Errorf("image %q, want wayfinder/pilot-discovery", c.Image)
	}
	// In-cluster config, and the pod's identity (from the env the downward
	// API fills) for the Lease that elects the Ingress status writer.
	if !slices.Equal(c.Args, []string{"discovery", "--kubeconfig=", "--pod-name=$(POD_NAME)", "--pod-namespace=$(POD_NAMESPACE)"}) {
		t.Errorf("args %q, want discovery in-cluster with its pod identity", c.Args)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["grpc-xds"] != 15010 || ports["grpc-xds-tls"] != 15012 || ports["http-monitoring"] != 15014 || len(ports) != 3 {
		t.Errorf("container ports %v, want grpc-xds 15010, grpc-xds-tls 15012 and http-monitoring 15014", ports)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz/ready" || p.HTTPGet.Port.String() != "http-monitoring" {
		t.Errorf("readiness probe %+v, want GET /healthz/ready on http-monitoring", p)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v, want cpu and memory requests and a memory limit", c.Resources)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v, want read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v, want a non-root user", psc)
	}
	if sel := d.Spec.Selector.MatchLabels; len(sel) == 0 || !isSubset(sel, d.Spec.Template.Labels) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", sel, d.Spec.Template.Labels)
	}

	svc := objs["Service/pilot-discovery"].(*corev1.Service)
	if !isSubset(svc.Spec.Selector, d.Spec.Template.Labels) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the Deployment's pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	svcPorts := map[string]string{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = fmt.Sprintf("%d->%s", p.Port, p.TargetPort.String())
	}
	if want := map[string]string{"grpc-xds": "15010->grpc-xds", "grpc-xds-tls": "15012->grpc-xds-tls", "http-monitoring": "15014->http-monitoring"}; !mapsEqual(svcPorts, want) {
		t.Errorf("Service ports %v, want %v", svcPorts, want)
	}

	for k, role := range map[string]string{"ClusterRoleBinding/wayfinder-pilot-discovery": "wayfinder-pilot-discovery",
		"RoleBinding/wayfinder-pilot-discovery": "wayfinder-pilot-discovery", "ClusterRoleBinding/wayfinder-gateway-deployer": "wayfinder-gateway-deployer"} {
		var subjects []rbacv1.Subject
		var ref rbacv1.RoleRef
		switch b := objs[k].(type) {
		case *rbacv1.ClusterRoleBinding:
			subjects, ref = b.Subjects, b.RoleRef
		case *rbacv1.RoleBinding:
			subjects, ref = b.Subjects, b.RoleRef
		}
		want := rbacv1.Subject{Kind: "ServiceAccount", Name: "pilot-discovery", Namespace: namespace}
		if len(subjects) != 1 || subjects[0] != want {
			t.Errorf("%s binds %v, want only %v", k, subjects, want)
		}
		if ref.Name != role {
			t.Errorf("%s refers to %s %q", k, ref.Kind, ref.Name)
		}
	}
}

func isSubset(sub, super map[string]string) bool {
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return true
}

func mapsEqual(a, b map[string]string) bool { return len(a) == len(b) && isSubset(a, b) }

// grants flattens rules to "group/resource:verb" strings, sorted.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+"/"+res+":"+v)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func expand(groupResources []string, verbs ...string) []string {
	var out []string
	for _, gr := range groupResources {
		for _, v := range verbs {
			out = append(out, gr+":"+v)
		}
	}
	return out
}

// The RBAC is least privilege: list and watch on what the controller reads
// (and get on CustomResourceDefinitions, whose metadata is watched for
// Gateway API CRDs installed after start), update on the status of Ingresses, Istio and Gateway API objects only, Events, TokenReviews and
// SubjectAccessReviews, and in its own namespace a Lease and the CA's
// Secret and ConfigMap and a watch on the mesh config's ConfigMap; the gateway deployer's rights in a ClusterRole of
// their own (get on Secrets only there, which RBAC's escalation check asks
// of what grants it); no wildcards, nothing else.
func TestRBACIsLeastPrivilege(t *testing.T) {
	objs := decodeBase(t)
	cr := objs["ClusterRole/wayfinder-pilot-discovery"].(*rbacv1.ClusterRole)
	read := []string{
		"networking.istio.io/gateways", "networking.istio.io/virtualservices",
		"networking.istio.io/destinationrules", "networking.istio.io/serviceentries", "networking.istio.io/envoyfilters",
		"telemetry.istio.io/telemetries", "security.istio.io/requestauthentications", "security.istio.io/authorizationpolicies",
		"networking.k8s.io/ingresses", "networking.k8s.io/ingressclasses",
		"/services", "/pods", "/secrets", "/namespaces", "discovery.k8s.io/endpointslices",
		// ConfigMaps: a Gateway's parametersRef and the CA bundles the
		// Gateway API names.
		"/configmaps",
		"gateway.networking.k8s.io/gatewayclasses", "gateway.networking.k8s.io/gateways",
		"gateway.networking.k8s.io/httproutes", "gateway.networking.k8s.io/grpcroutes",
		"gateway.networking.k8s.io/tlsroutes", "gateway.networking.k8s.io/tcproutes",
		"gateway.networking.k8s.io/referencegrants", "gateway.networking.k8s.io/listenersets",
		"gateway.networking.k8s.io/backendtlspolicies",
	}
	want := expand(read, "list", "watch")
	want = append(want, expand([]string{"apiextensions.k8s.io/customresourcedefinitions"}, "get", "list", "watch")...)
	want = append(want, "networking.k8s.io/ingresses/status:update")
	want = append(want, expand([]string{"networking.istio.io/gateways/status", "networking.istio.io/virtualservices/status",
		"networking.istio.io/destinationrules/status", "networking.istio.io/serviceentries/status",
		"networking.istio.io/envoyfilters/status", "telemetry.istio.io/telemetries/status", "security.istio.io/requestauthentications/status",
		"security.istio.io/authorizationpolicies/status"}, "update")...)
	want = append(want, expand([]string{"gateway.networking.k8s.io/gatewayclasses/status", "gateway.networking.k8s.io/gateways/status",
		"gateway.networking.k8s.io/httproutes/status", "gateway.networking.k8s.io/grpcroutes/status",
		"gateway.networking.k8s.io/tlsroutes/status", "gateway.networking.k8s.io/tcproutes/status",
		"gateway.networking.k8s.io/listenersets/status", "gateway.networking.k8s.io/backendtlspolicies/status"}, "update")...)
	want = append(want, expand([]string{"/events", "events.k8s.io/events"}, "create", "patch")...)
	want = append(want, "authentication.k8s.io/tokenreviews:create", "authorization.k8s.io/subjectaccessreviews:create")
	slices.Sort(want)
	if got := grants(cr.Rules); !slices.Equal(got, want) {
		t.Errorf("ClusterRole grants\n  %v\nwant\n  %v", got, want)
	}
	// The deployed proxies of Gateways, in a ClusterRole of their own (left
	// out, or bound per namespace): a live read, server-side apply and
	// removal of their objects, and get on Secrets, which each Gateway's
	// Role grants its ServiceAccount (RBAC's escalation check).
	dep := objs["ClusterRole/wayfinder-gateway-deployer"].(*rbacv1.ClusterRole)
	wantDep := expand([]string{"apps/deployments", "/services", "/serviceaccounts", "/configmaps",
		"rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/rolebindings"}, "get", "list", "watch", "create", "patch", "delete")
	wantDep = append(wantDep, "/secrets:get")
	slices.Sort(wantDep)
	if got := grants(dep.Rules); !slices.Equal(got, wantDep) {
		t.Errorf("ClusterRole wayfinder-gateway-deployer grants\n  %v\nwant\n  %v", got, wantDep)
	}
	role := objs["Role/wayfinder-pilot-discovery"].(*rbacv1.Role)
	wantRole := expand([]string{"coordination.k8s.io/leases", "/secrets", "/configmaps"}, "create", "get", "update")
	// The mesh config's ConfigMap istio, watched as istiod does.
	wantRole = append(wantRole, "/configmaps:list", "/configmaps:watch")
	slices.Sort(wantRole)
	if got := grants(role.Rules); !slices.Equal(got, wantRole) {
		t.Errorf("Role grants %v, want %v", got, wantRole)
	}
	for _, r := range slices.Concat(cr.Rules, dep.Rules, role.Rules) {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: unexpected resourceNames or nonResourceURLs", r)
		}
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
			if strings.Contains(s, "*") {
				t.Errorf("rule %+v has a wildcard", r)
			}
		}
	}
}

// The CRDs are Istio's, for the kinds Wayfinder reads: the networking
// kinds storing v1 (EnvoyFilter, which Istio serves at v1alpha3 only,
// storing that), Telemetry serving v1 and v1alpha1, the security kinds
// storing v1 and serving v1beta1 too.
func TestCRDs(t *testing.T) {
	docs, err := manifests.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range docs {
		var crd struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Group    string `json:"group"`
				Scope    string `json:"scope"`
				Versions []struct {
					Name    string `json:"name"`
					Served  bool   `json:"served"`
					Storage bool   `json:"storage"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(d.YAML, &crd); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
			t.Errorf("%s is %s %s, want a v1 CustomResourceDefinition", d, crd.APIVersion, crd.Kind)
		}
		if (crd.Spec.Group != "networking.istio.io" && crd.Spec.Group != "telemetry.istio.io" && crd.Spec.Group != "security.istio.io") ||
			crd.Spec.Scope != "Namespaced" {
			t.Errorf("%s: group %q scope %q", d, crd.Spec.Group, crd.Spec.Scope)
		}
		// The networking kinds store v1; Istio's Telemetry CRD stores
		// v1alpha1 and serves both, and Wayfinder (like istiod) reads v1.
		served := map[string]bool{}
		v1ok := false
		envoyFilter := crd.Metadata.Name == "envoyfilters.networking.istio.io"
		for _, v := range crd.Spec.Versions {
			served[v.Name] = v.Served
			if v.Name == "v1" && v.Served && (v.Storage || crd.Spec.Group == "telemetry.istio.io") {
				v1ok = true
			}
			if envoyFilter && v.Name == "v1alpha3" && v.Served && v.Storage {
				v1ok = true
			}
		}
		if !v1ok {
			t.Errorf("%s: v1 (v1alpha3 for EnvoyFilter) is not served (and, in networking.istio.io, the storage version)", d)
		}
		if crd.Spec.Group == "telemetry.istio.io" && !served["v1alpha1"] {
			t.Errorf("%s: v1alpha1, which istiod also reads, is not served", d)
		}
		if crd.Spec.Group == "security.istio.io" && !served["v1beta1"] {
			t.Errorf("%s: v1beta1, which istiod also reads, is not served", d)
		}
		names = append(names, crd.Metadata.Name)
	}
	slices.Sort(names)
	want := []string{"authorizationpolicies.security.istio.io", "destinationrules.networking.istio.io",
		"envoyfilters.networking.istio.io", "gateways.networking.istio.io",
		"requestauthentications.security.istio.io", "serviceentries.networking.istio.io",
		"telemetries.telemetry.istio.io", "virtualservices.networking.istio.io"}
	if !slices.Equal(names, want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
}

// The Gateway API CRDs are the module's standard channel, one bundle
// version, every file in crds/gateway-api listed by its kustomization, and
// each kind serving v1.
func TestGatewayAPICRDs(t *testing.T) {
	listed, err := manifests.KustomizationResources(manifests.GatewayAPICRDsDir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(manifests.FS, manifests.GatewayAPICRDsDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".yaml") && n != "kustomization.yaml" {
			files = append(files, n)
		}
	}
	if sorted := slices.Sorted(slices.Values(listed)); !slices.Equal(sorted, files) {
		t.Errorf("%s/kustomization.yaml lists %v; the folder holds %v", manifests.GatewayAPICRDsDir, sorted, files)
	}
	docs, err := manifests.GatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range docs {
		var crd struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(d.YAML, &crd); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group != "gateway.networking.k8s.io" {
			t.Errorf("%s: kind %q group %q", d, crd.Kind, crd.Spec.Group)
		}
		if v := crd.Metadata.Annotations["gateway.networking.k8s.io/bundle-version"]; v != "v1.6.3" {
			t.Errorf("%s: bundle-version %q, want v1.6.3 (the version in go.mod)", d, v)
		}
		if ch := crd.Metadata.Annotations["gateway.networking.k8s.io/channel"]; ch != "standard" {
			t.Errorf("%s: channel %q, want standard", d, ch)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(v struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
		}) bool {
			return v.Name == "v1" && v.Served
		}) {
			t.Errorf("%s: v1 not served", d)
		}
		kinds = append(kinds, crd.Spec.Names.Kind)
	}
	slices.Sort(kinds)
	want := []string{"BackendTLSPolicy", "GRPCRoute", "Gateway", "GatewayClass", "HTTPRoute", "ListenerSet",
		"ReferenceGrant", "TCPRoute", "TLSRoute"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("Gateway API CRDs %v, want %v", kinds, want)
	}
}

// The base objects are accepted by a real API server (dry run, then for
// real), and its RBAC authorizer then gives pilot-discovery's ServiceAccount
// exactly the access the controller needs.
func TestBaseAppliesToAPIServer(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	docs, err := manifests.Base()
	if err != nil {
		t.Fatal(err)
	}
	var raw [][]byte
	for _, d := range docs {
		raw = append(raw, d.YAML)
	}
	// The dry run needs the namespace to exist already; apply it first.
	if _, err := c.Apply(ctx, apiserver.ApplyOptions{}, raw[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, apiserver.ApplyOptions{DryRun: true}, raw...); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	applied, err := c.Apply(ctx, apiserver.ApplyOptions{}, raw...)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(docs) {
		t.Fatalf("applied %d objects, want %d", len(applied), len(docs))
	}
	for _, o := range applied {
		if o.GetUID() == "" {
			t.Errorf("%s %s was not stored", o.GetKind(), o.GetName())
		}
	}
	dep, err := c.Clientset().AppsV1().Deployments(namespace).Get(ctx, "pilot-discovery", metav1.GetOptions{})
	if err != nil || dep.Spec.Template.Spec.Containers[0].Args[0] != "discovery" {
		t.Fatalf("stored Deployment %v, err %v", dep, err)
	}

	sa := "system:serviceaccount:" + namespace + ":pilot-discovery"
	cases := []struct {
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Group: "networking.istio.io", Resource: "virtualservices", Verb: "watch"}, true},
		{authorizationv1.ResourceAttributes{Group: "networking.istio.io", Resource: "gateways", Verb: "list", Namespace: "istio-system"}, true},
		{authorizationv1.ResourceAttributes{Group: "discovery.k8s.io", Resource: "endpointslices", Verb: "list"}, true},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "watch"}, true},
		{authorizationv1.ResourceAttributes{Group: "networking.k8s.io", Resource: "ingresses", Subresource: "status", Verb: "update", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Resource: "events", Verb: "create", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "httproutes", Subresource: "status", Verb: "update", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "gatewayclasses", Subresource: "status", Verb: "update"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "listenersets", Verb: "watch", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "listenersets", Subresource: "status", Verb: "update", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "backendtlspolicies", Verb: "list", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "backendtlspolicies", Subresource: "status", Verb: "update", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "listenersets", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: namespace}, true},
		// Deploying the proxies of Gateways (server-side apply).
		{authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "patch", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Resource: "serviceaccounts", Verb: "create", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Resource: "services", Verb: "delete", Namespace: "default"}, true},
		// Authenticating gateways and debug callers; Secret access checks.
		{authorizationv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}, true},
		{authorizationv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}, true},
		// The self-signed CA in its own namespace.
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "create", Namespace: namespace}, true},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: namespace, Name: "wayfinder-ca"}, true},
		{authorizationv1.ResourceAttributes{Resource: "configmaps", Verb: "update", Namespace: namespace, Name: "wayfinder-ca-root-cert"}, true},
		// The mesh config's ConfigMap istio, watched in its own namespace.
		{authorizationv1.ResourceAttributes{Resource: "configmaps", Verb: "watch", Namespace: namespace, Name: "istio"}, true},
		// Reading a Secret by name: only through the gateway deployer's
		// ClusterRole, as the API server lets pilot-discovery grant each
		// Gateway's Role get on Secrets only if it holds it (it lists
		// them all already).
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: "default", Name: "tls"}, true},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "roles", Verb: "create", Namespace: "default"}, true},
		// Denied: writes to config, leases outside its namespace, Ingress
		// spec updates.
		{authorizationv1.ResourceAttributes{Group: "networking.istio.io", Resource: "virtualservices", Verb: "create", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "create"}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "networking.k8s.io", Resource: "ingresses", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "httproutes", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Resource: "pods", Verb: "delete", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Resource: "services", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "create", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Resource: "configmaps", Verb: "update", Namespace: "default"}, false},
	}
	for _, tc := range cases {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
			ResourceAttributes: &tc.attrs,
		}}
		// The authorizer sees new bindings through its informer a moment
		// after they are stored: an expected grant is rechecked briefly.
		var got *authorizationv1.SubjectAccessReview
		pollCtx, pollCancel := context.WithTimeout(ctx, 10*time.Second)
		_ = wait.PollUntilContextCancel(pollCtx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err = c.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			return err != nil || got.Status.Allowed || !tc.allowed, nil
		})
		pollCancel()
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.allowed {
			t.Errorf("%s %s %+v: allowed=%v (%s), want %v", sa, tc.attrs.Verb, tc.attrs, got.Status.Allowed, got.Status.Reason, tc.allowed)
		}
	}
}
