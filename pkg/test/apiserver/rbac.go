package apiserver

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// restrictedRole is what RestrictedUser may do in a namespace
// AllowRestricted names: read what a control plane reads, record Events and
// hold a leader-election Lease.
const restrictedRole = "wayfinder-test-restricted"

// restrictedClusterRole is RestrictedUser's only cluster-wide right:
// reading IngressClasses, which are cluster-scoped.
const restrictedClusterRole = "wayfinder-test-restricted-cluster"

func setupRestrictedRoles(ctx context.Context, cs kubernetes.Interface) error {
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: restrictedRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"networking.istio.io"}, Resources: []string{"gateways", "virtualservices", "destinationrules", "serviceentries", "envoyfilters"}, Verbs: read},
			{APIGroups: []string{"telemetry.istio.io"}, Resources: []string{"telemetries"}, Verbs: read},
			{APIGroups: []string{"security.istio.io"}, Resources: []string{"requestauthentications", "authorizationpolicies"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
			{APIGroups: []string{""}, Resources: []string{"services", "pods", "secrets"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		},
	}
	cluster := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: restrictedClusterRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingressclasses"}, Verbs: read},
		},
	}
	for _, r := range []*rbacv1.ClusterRole{role, cluster} {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRole %s: %w", r.Name, err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: restrictedClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: restrictedClusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: RestrictedUser}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

// AllowRestricted lets RestrictedUser read (and record Events and Leases)
// in the given namespaces, which must exist; every other namespace stays
// forbidden to it.
func (c *Cluster) AllowRestricted(t testing.TB, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: restrictedRole, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: restrictedRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: RestrictedUser}},
		}
		_, err := c.Clientset().RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("allowing %s in namespace %s: %v", RestrictedUser, ns, err)
		}
	}
}

// AllowSecretReading gives ServiceAccount ns/sa what Istio's gateway chart
// gives a gateway: get, list and watch on the Secrets of its own namespace
// (manifests/examples/gateway-role.yaml). Wayfinder sends a proxy the
// Secrets of its namespace only when its ServiceAccount may list them.
func (c *Cluster) AllowSecretReading(t testing.TB, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	name := "secret-reader-" + sa
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := c.Clientset().RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating Role %s/%s: %v", ns, name, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if _, err := c.Clientset().RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating RoleBinding %s/%s: %v", ns, name, err)
	}
}
