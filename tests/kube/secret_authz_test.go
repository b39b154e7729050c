package kube

import (
	"bytes"
	"context"
	"fmt"
	authorizationv1 "k8s.io/api/authorization/v1"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/manifests"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/credentials"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// The secret authorizer against the real API server and its RBAC, with
// Wayfinder's own ClusterRole from manifests/base (it must be allowed to
// create SubjectAccessReviews): a gateway's ServiceAccount may not have
// another namespace's Secret until a Role with get on that Secret is bound
// to it, and loses it when the binding goes. The identity is given
// directly here; TestGatewaySecretsFollowRealTokens runs the same check
// behind the secure port, for gateways with real ServiceAccount tokens.
func TestSecretAuthorizerFollowsRBAC(t *testing.T) {
	c, appNS := newCluster(t, "app")
	gwNS := c.Namespace(t, "gateway")
	admin := c.Clientset()
	ctx := context.Background()

	// The control plane runs as a user bound to the manifests' ClusterRole.
	const controlPlane = "wayfinder-test-pilot-discovery"
	role := wayfinderClusterRole(t)
	role.Name = "wayfinder-test-" + appNS
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controlPlane}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	cfg := c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: controlPlane}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The API server's RBAC authorizer sees a new binding a moment after it
	// is created: wait until the control plane's ServiceAccount may create
	// reviews at all, so what follows tests the reviews' answers.
	poll.Until(t, "the ClusterRoleBinding to take effect", func() bool {
		_, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "probe", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "get", Resource: "secrets", Namespace: appNS}}}, metav1.CreateOptions{})
		return err == nil
	}, apiPoll...)

	clk := clocktesting.NewFakeClock(time.Now())
	a, err := credentials.New(credentials.Options{Client: cs.AuthorizationV1().SubjectAccessReviews(), Clock: clk,
		// waitAnswer steps the clock 2 minutes a time: allowed answers
		// must not go stale meanwhile.
		DeniedTTL: time.Minute, AllowedTTL: time.Minute, MaxStale: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Reviews run on the authorizer's own loop; asking never waits.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	gw := model.Identity{Namespace: gwNS, ServiceAccount: "istio-ingressgateway-service-account", Method: model.MethodToken}
	secret := model.SecretRef{Namespace: appNS, Name: "shop-tls"}
	if ok, reason := answered(t, func() (bool, string) { return a.CanGetSecret(gw, secret) }); ok || !strings.Contains(reason, "RBAC does not allow get") {
		t.Fatalf("without a RoleBinding: allowed %v, reason %q; want denied by RBAC (not a failed review)", ok, reason)
	}
	if ok, reason := answered(t, func() (bool, string) { return a.CanListSecrets(gw, gwNS) }); ok || !strings.Contains(reason, "RBAC does not allow list") {
		t.Fatalf("list on its namespace without a Role: allowed %v, reason %q", ok, reason)
	}

	// Grant get on that one Secret with the README's example, renamed to
	// the test's namespaces.
	example, err := os.ReadFile(filepath.Join("..", "..", "manifests", "examples", "gateway-secret-access.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	example = bytes.ReplaceAll(example, []byte("namespace: istio-system"), []byte("namespace: "+gwNS))
	example = bytes.ReplaceAll(example, []byte("namespace: shop"), []byte("namespace: "+appNS))
	if _, err := c.Apply(ctx, apiserver.ApplyOptions{}, bytes.Split(example, []byte("\n---\n"))...); err != nil {
		t.Fatal(err)
	}
	const rbName = "ingressgateway-reads-shop-tls"
	// The API server's authorizer sees new bindings through its own
	// informer: ask again (each time past the cached answer's TTL) until
	// it does, within the bounded wait.
	waitAnswer(t, a, clk, gw, secret, true)
	if ok, _ := answered(t, func() (bool, string) { return a.CanGetSecret(gw, model.SecretRef{Namespace: appNS, Name: "other"}) }); ok {
		t.Error("a Role on shop-tls let the gateway have another Secret")
	}
	other := model.Identity{Namespace: gwNS, ServiceAccount: "someone-else"}
	if ok, _ := answered(t, func() (bool, string) { return a.CanGetSecret(other, secret) }); ok {
		t.Error("another ServiceAccount of the gateway's namespace got the Secret")
	}
	if ok, _ := answered(t, func() (bool, string) { return a.CanListSecrets(gw, appNS) }); ok {
		t.Error("get on one Secret let the gateway list the namespace's")
	}

	// Revoked: denied again once the allowed answer expires.
	if err := admin.RbacV1().RoleBindings(appNS).Delete(ctx, rbName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, a, clk, gw, secret, false)
}

// answered asks until the authorizer's loop has answered (the first ask
// of a question is refused as pending while it is reviewed).
func answered(t *testing.T, ask func() (bool, string)) (bool, string) {
	t.Helper()
	var ok bool
	reason := poll.Seen(t, "an answer", func() (string, bool) { // from the authorizer's loop
		var reason string
		ok, reason = ask()
		return reason, !strings.Contains(reason, "not answered yet")
	}, poll.Timeout(waitTimeout), poll.Interval(10*time.Millisecond))
	return ok, reason
}

// waitAnswer steps the clock past the cache's TTL and asks again until the
// answer is want.
func waitAnswer(t *testing.T, a *credentials.Authorizer, clk *clocktesting.FakeClock, id model.Identity, ref model.SecretRef, want bool) {
	t.Helper()
	// Polled: the API server's RBAC informer, not ours.
	poll.Seen(t, fmt.Sprintf("the answer for %s to be %v", ref, want), func() (string, bool) {
		clk.Step(2 * time.Minute)
		ok, reason := a.CanGetSecret(id, ref)
		return fmt.Sprintf("%v (%s)", ok, reason), ok == want
	}, apiPoll...)
}

// wayfinderClusterRole is the ClusterRole users apply from manifests/base.
func wayfinderClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	docs, err := manifests.Base()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.File != "base/clusterrole.yaml" {
			continue
		}
		cr := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(d.YAML, cr); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		cr.ResourceVersion = ""
		return cr
	}
	t.Fatal("no ClusterRole in manifests/base")
	return nil
}
