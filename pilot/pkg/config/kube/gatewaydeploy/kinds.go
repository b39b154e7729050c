package gatewaydeploy

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// kindClient is the API calls the deployer makes on one kind: a live
// read, a server-side apply (field manager FieldManager, forced: the
// deployer owns the fields it sets, whoever changed them), and a delete
// with preconditions.
type kindClient struct {
	get    func(ctx context.Context, namespace, name string) (object, error)
	apply  func(ctx context.Context, namespace, name string, data []byte) error
	delete func(ctx context.Context, namespace, name string, uid types.UID, resourceVersion string) error
}

func kindClients(c kclient.Kube) map[string]kindClient {
	return map[string]kindClient{
		"ServiceAccount": clientOf(c.CoreV1().ServiceAccounts),
		"ConfigMap":      clientOf(c.CoreV1().ConfigMaps),
		"Deployment": clientOf(func(ns string) kclient.Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
			return c.AppsV1().Deployments(ns)
		}),
		"Service": clientOf(func(ns string) kclient.Resource[*corev1.Service, *corev1.ServiceList] {
			return c.CoreV1().Services(ns)
		}),
		"Role":        clientOf(c.RbacV1().Roles),
		"RoleBinding": clientOf(c.RbacV1().RoleBindings),
	}
}

func clientOf[T object, L any](res func(namespace string) kclient.Resource[T, L]) kindClient {
	return kindClient{
		get: func(ctx context.Context, ns, name string) (object, error) {
			o, err := res(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return o, nil
		},
		apply: func(ctx context.Context, ns, name string, data []byte) error {
			_, err := res(ns).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: ptr(true)})
			return err
		},
		delete: func(ctx context.Context, ns, name string, uid types.UID, rv string) error {
			return res(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		},
	}
}
