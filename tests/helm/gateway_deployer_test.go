package helm

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// deployerKinds are what the gateway deployer writes: no other rights
// than its own may create, patch or delete them.
var deployerKinds = []string{"apps/deployments", "/services", "/serviceaccounts", "/configmaps", "rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/rolebindings"}

// writes lists "group/resource:verb" of every create, patch or delete a
// rendered ClusterRole or Role grants on the deployer's kinds.
func writes(t *testing.T, o object) []string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(o, "rules")
	var out []string
	for _, r := range rules {
		m := r.(map[string]any)
		for _, g := range strsOf(m["apiGroups"]) {
			for _, res := range strsOf(m["resources"]) {
				for _, v := range strsOf(m["verbs"]) {
					if slices.Contains(deployerKinds, g+"/"+res) && (v == "create" || v == "patch" || v == "delete" || v == "*") {
						out = append(out, g+"/"+res+":"+v)
					}
				}
			}
		}
	}
	return out
}

func strsOf(v any) []string {
	if v == nil {
		return nil
	}
	return strs(v)
}

// roleWrites maps each ClusterRole ("ClusterRole//NAME") and Role
// ("Role/NAMESPACE/NAME") to the writes it grants on the deployer's kinds,
// leaving out the ones granting none and pilot-discovery's Role of its
// own namespace.
func roleWrites(t *testing.T, objs map[string]object) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for k, o := range objs {
		// The Role of the release namespace keeps the self-signed CA's
		// ConfigMap: not the deployer's.
		if !strings.HasPrefix(k, "ClusterRole/") && !strings.HasPrefix(k, "Role/") || k == "Role/"+namespace+"/wayfinder-pilot-discovery" {
			continue
		}
		if w := writes(t, o); len(w) > 0 {
			out[k] = w
		}
	}
	return out
}

// The gateway deployer's rights follow the values: cluster-wide by
// default (its own ClusterRole, as manifests/base), none when it is off
// (and the flag turns it off), and in each of watchNamespaces only when
// they are set.
func TestGatewayDeployerRightsFollowValues(t *testing.T) {
	objs, _ := render(t, "")
	got := roleWrites(t, objs)
	if len(got) != 1 || len(got["ClusterRole//wayfinder-gateway-deployer"]) != 3*len(deployerKinds) {
		t.Errorf("default: writes on the deployer's kinds %v, want create, patch and delete in ClusterRole wayfinder-gateway-deployer alone", got)
	}
	if _, ok := objs["ClusterRoleBinding//wayfinder-gateway-deployer"]; !ok {
		t.Error("default: ClusterRole wayfinder-gateway-deployer not bound")
	}
	if hasFlag(strs(container(t, objs)["args"]), "--disable-gateway-deployment") {
		t.Error("default: deployment disabled")
	}

	objs, _ = render(t, `gatewayDeployment: {enabled: false}`)
	if got := roleWrites(t, objs); len(got) != 0 {
		t.Errorf("deployment off: writes on the deployer's kinds remain: %v", got)
	}
	for k := range objs {
		if strings.Contains(k, "gateway-deployer") {
			t.Errorf("deployment off: %s rendered", k)
		}
	}
	if !slices.Contains(strs(container(t, objs)["args"]), "--disable-gateway-deployment") {
		t.Error("deployment off: --disable-gateway-deployment not passed")
	}

	objs, _ = render(t, `watchNamespaces: [shop, web]`)
	got = roleWrites(t, objs)
	want := []string{"Role/shop/wayfinder-gateway-deployer", "Role/web/wayfinder-gateway-deployer"}
	if keys := slices.Sorted(mapKeys(got)); !slices.Equal(keys, want) {
		t.Errorf("watchNamespaces: writes on the deployer's kinds granted by %v, want %v only", keys, want)
	}
	for _, ns := range []string{"shop", "web"} {
		rb := objs["RoleBinding/"+ns+"/wayfinder-gateway-deployer"]
		if s := fmt.Sprint(rb["roleRef"], rb["subjects"]); !strings.Contains(s, "kind:Role") || !strings.Contains(s, "name:pilot-discovery namespace:"+namespace) {
			t.Errorf("RoleBinding in %s: %s", ns, s)
		}
	}
	for k := range objs {
		if strings.HasPrefix(k, "ClusterRole") && strings.Contains(k, "gateway-deployer") {
			t.Errorf("watchNamespaces: %s rendered: the rights stay cluster-wide", k)
		}
	}
}

func mapKeys[V any](m map[string]V) iter.Seq[string] { return maps.Keys(m) }

// kustomize's component no-gateway-deployment does for manifests/base
// what gatewayDeployment.enabled false does for the chart.
func TestKustomizeComponentNoGatewayDeployment(t *testing.T) {
	base, err := filepath.Abs(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := filepath.Abs("../../manifests/components/no-gateway-deployment")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := fmt.Sprintf("resources: [%s]\ncomponents: [%s]\n", rel(base), rel(comp))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]object{}
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := yaml.Marshal(m)
		var o object
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		objs[key(o)] = o
	}
	if got := roleWrites(t, objs); len(got) != 0 {
		t.Errorf("writes on the deployer's kinds remain: %v", got)
	}
	if _, ok := objs["ClusterRoleBinding//wayfinder-gateway-deployer"]; ok {
		t.Error("ClusterRoleBinding wayfinder-gateway-deployer kept")
	}
	if !slices.Contains(strs(container(t, objs)["args"]), "--disable-gateway-deployment") {
		t.Error("--disable-gateway-deployment not passed")
	}
	// The chart with deployment off renders the same objects.
	chart, _ := render(t, `gatewayDeployment: {enabled: false}`)
	if a, b := slices.Sorted(mapKeys(objs)), slices.Sorted(mapKeys(chart)); !slices.Equal(a, b) {
		t.Errorf("kustomize with the component renders %v; the chart with deployment off %v", a, b)
	}
}

// The rights as the API server enforces them, acting as pilot-discovery's
// ServiceAccount: with watchNamespaces it may make a Gateway's objects,
// Role (Secrets get, list and watch: the escalation check passes) and
// RoleBinding in a watched namespace and nothing of the kind elsewhere;
// with deployment off nowhere; by default anywhere.
func TestGatewayDeployerRightsOnAPIServer(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.Clientset()
	watched, other := c.Namespace(t, "gwd-watched"), c.Namespace(t, "gwd-other")
	cfg := c.RESTConfig()
	cfg.Impersonate.UserName = "system:serviceaccount:" + namespace + ":pilot-discovery"
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(vals string) {
		t.Helper()
		_, docs := render(t, vals)
		if _, err := c.Apply(ctx, apiserver.ApplyOptions{}, docs...); err != nil {
			t.Fatalf("apply of %q: %v", vals, err)
		}
	}
	// Apply does not prune: drop the cluster-wide grant an earlier
	// rendering left.
	unbind := func() {
		t.Helper()
		if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, "wayfinder-gateway-deployer", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	// canDeploy makes (then removes) what the deployer makes for a
	// Gateway in ns: a ServiceAccount, and a Role on Secrets bound to it.
	canDeploy := func(ns string) error {
		name := fmt.Sprintf("probe-%d", time.Now().UnixNano())
		if _, err := sa.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := sa.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := sa.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		return sa.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	// The API server's authorizer follows RBAC objects through its own
	// informers: poll until the answer is the one wanted.
	expect := func(what string, ns string, allowed bool) {
		t.Helper()
		var err error
		if poll.Wait(func() bool {
			err = canDeploy(ns)
			return allowed && err == nil || !allowed && apierrors.IsForbidden(err)
		}, poll.Timeout(30*time.Second), poll.Interval(100*time.Millisecond)) != nil {
			t.Errorf("%s: %v, want allowed %v", what, err, allowed)
		}
	}

	unbind()
	apply(fmt.Sprintf("watchNamespaces: [%s]", watched))
	expect("watchNamespaces: deploying in the watched namespace", watched, true)
	expect("watchNamespaces: deploying in another namespace", other, false)

	unbind()
	apply("gatewayDeployment: {enabled: false}")
	expect("deployment off: deploying in an unwatched namespace", other, false)

	apply("")
	expect("default: deploying anywhere", other, true)
}
