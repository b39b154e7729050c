package gatewayapi_test

import (
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	kubegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewayapi"
	cfgschema "github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// lateKube serves the Gateway API group once served is set, as the API
// server does once a CRD is Established.
type lateKube struct {
	kclient.Kube
	served atomic.Pointer[metav1.APIResourceList]
}

func (k *lateKube) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if l := k.served.Load(); l != nil && l.GroupVersion == gv {
		return l, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
}

func (k *lateKube) serve(resources ...string) {
	list := &metav1.APIResourceList{GroupVersion: gw.GroupVersion.String()}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Namespaced: r != "gatewayclasses"})
	}
	k.served.Store(list)
}

func crd(kind cfgschema.GatewayAPIKind) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: kind.CRDName()},
	}
}

// Gateway API CRDs installed after start are watched without a restart:
// one whose kind is not served yet (not Established) is looked at again
// until it is.
func TestControllerWatchesLateCRDs(t *testing.T) {
	kube := &lateKube{Kube: kclienttest.Kube(fake.NewClientset(webService))}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme)
	c, events := runController(t, kubegatewayapi.ControllerOptions{
		Client: kclienttest.GatewayAPI(newClient(t, routeTo("shop", "web"))), Kube: kube, Metadata: md})
	if n := len(c.List(cfgschema.Gateway, "")); n != 0 {
		t.Fatalf("%d Gateways before the CRDs, want none", n)
	}

	crds := md.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, k := range []cfgschema.GatewayAPIKind{cfgschema.GatewayClassKind, cfgschema.GatewayKind, cfgschema.HTTPRouteKind} {
		if _, err := crds.(metadatafake.MetadataClient).CreateFake(crd(k), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Installed, not yet served: the controller retries.
	kube.serve("gatewayclasses", "gateways", "httproutes")
	expect(t, events, "add Gateway edge-ns/edge-http-gwapi", "add VirtualService edge-ns/edge-http-shop-example-com-gwapi")
}
