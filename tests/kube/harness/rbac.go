package harness

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
			{APIGroups: []string{"networking.istio.io"}, Resources: []string{"gateways", "virtualservices", "destinationrules", "serviceentries"}, Verbs: read},
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
