package kube

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
)

// gatewayAPIClass returns a Gateway API client of c and creates the
// GatewayClass className of Wayfinder's controller, deleted when the test
// ends. GatewayClasses are cluster-scoped and tests share the cluster, so
// callers name it after their namespace.
func gatewayAPIClass(t *testing.T, c *apiserver.Cluster, className string) gwclient.Interface {
	t.Helper()
	gwc, err := gwclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gwc.GatewayV1().GatewayClasses().Create(context.Background(), &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = gwc.GatewayV1().GatewayClasses().Delete(context.Background(), className, metav1.DeleteOptions{})
	})
	return gwc
}
