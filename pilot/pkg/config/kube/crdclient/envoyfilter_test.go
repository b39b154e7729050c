package crdclient

import (
	"context"
	"strings"
	"testing"

	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// EnvoyFilters are read from networking.istio.io/v1alpha3 and checked by
// the real validator: the valid one is served with its priority and patch
// value, an invalid one is not and is reported naming the field; Events
// refer to the object at v1alpha3.
func TestEnvoyFiltersAreRead(t *testing.T) {
	e := newEnv(t, func(o *Options, client *istiofake.Clientset) {
		o.validate = validation.Validate
		ctx := context.Background()
		efs := client.NetworkingV1alpha3().EnvoyFilters("edge")
		value := &networkingapi.EnvoyFilter_Patch{Operation: networkingapi.EnvoyFilter_Patch_MERGE}
		if _, err := efs.Create(ctx, &networkingv1alpha3.EnvoyFilter{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "good"},
			Spec: networkingapi.EnvoyFilter{Priority: 3, ConfigPatches: []*networkingapi.EnvoyFilter_EnvoyConfigObjectPatch{{
				ApplyTo: networkingapi.EnvoyFilter_CLUSTER,
				Patch:   &networkingapi.EnvoyFilter_Patch{Operation: networkingapi.EnvoyFilter_Patch_REMOVE},
			}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := efs.Create(ctx, &networkingv1alpha3.EnvoyFilter{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "bad"},
			Spec: networkingapi.EnvoyFilter{ConfigPatches: []*networkingapi.EnvoyFilter_EnvoyConfigObjectPatch{{
				ApplyTo: networkingapi.EnvoyFilter_LISTENER, Patch: value,
			}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.waitSynced()
	if d := e.next(); d.cur.Key().String() != "EnvoyFilter edge/good" {
		t.Fatalf("delivered %s", d.cur.Key())
	}
	e.none()
	efs := e.c.List(schema.EnvoyFilter, "")
	if len(efs) != 1 {
		t.Fatalf("List(EnvoyFilter) = %v", efs)
	}
	if spec, ok := efs[0].Spec.(*networkingapi.EnvoyFilter); !ok || spec.GetPriority() != 3 {
		t.Fatalf("spec %T %v", efs[0].Spec, efs[0].Spec)
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Key.String() != "EnvoyFilter edge/bad" || errs[0].Field != "spec.configPatches[0].patch.value" {
		t.Fatalf("ConfigErrors = %v", errs)
	}
	ref := objectReference(schema.EnvoyFilter, &metav1.ObjectMeta{Name: "x", UID: types.UID("u")})
	if ref.APIVersion != "networking.istio.io/v1alpha3" || ref.Kind != "EnvoyFilter" {
		t.Errorf("event reference %v", ref)
	}
	if ref := objectReference(schema.Gateway, &metav1.ObjectMeta{Name: "x"}); ref.APIVersion != "networking.istio.io/v1" {
		t.Errorf("Gateway event reference %v", ref)
	}
}

// Where the EnvoyFilter CRD is not installed, the other kinds still sync
// and are served, and the missing kind is a warning naming its CRD.
func TestMissingEnvoyFilterCRDIsReportedAndOthersServed(t *testing.T) {
	e := newEnv(t, func(_ *Options, client *istiofake.Clientset) {
		client.PrependReactor("list", "envoyfilters", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(k8sschema.GroupResource{Group: "networking.istio.io", Resource: "envoyfilters"}, "")
		})
	}, vs("default", "ok", "ok.example.com"))
	e.waitSynced()
	if d := e.next(); d.cur.Key().String() != "VirtualService default/ok" {
		t.Fatalf("delivered %s", d.cur.Key())
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || !errs[0].Warning || errs[0].Key.Kind != schema.EnvoyFilter ||
		!strings.Contains(errs[0].Message, "envoyfilters.networking.istio.io") || !strings.Contains(errs[0].Message, "CRD is installed") {
		t.Fatalf("ConfigErrors = %v, want one warning naming the EnvoyFilter CRD", errs)
	}
}
