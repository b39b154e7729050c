package crdclient

import (
	"context"
	"slices"
	"strings"
	"testing"

	securityapi "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// RequestAuthentications and AuthorizationPolicies are read from
// security.istio.io/v1 with their annotations (istio.io/dry-run) and
// checked by the real validator: an invalid one is not served and is
// reported naming the field.
func TestSecurityKindsAreRead(t *testing.T) {
	e := newEnv(t, func(o *Options, client *istiofake.Clientset) {
		o.validate = validation.Validate
		ctx := context.Background()
		sec := client.SecurityV1()
		if _, err := sec.RequestAuthentications("edge").Create(ctx, &securityv1.RequestAuthentication{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "jwt"},
			Spec:       securityapi.RequestAuthentication{JwtRules: []*securityapi.JWTRule{{Issuer: "https://issuer.example.com"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := sec.AuthorizationPolicies("edge").Create(ctx, &securityv1.AuthorizationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "allow", Annotations: map[string]string{"istio.io/dry-run": "true"}},
			Spec: securityapi.AuthorizationPolicy{Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{
				Source: &securityapi.Source{RemoteIpBlocks: []string{"203.0.113.0/24"}}}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := sec.AuthorizationPolicies("edge").Create(ctx, &securityv1.AuthorizationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "bad"},
			Spec: securityapi.AuthorizationPolicy{Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{
				Source: &securityapi.Source{IpBlocks: []string{"10.0.0.0/8", "10.0.0.0/33"}}}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.waitSynced()
	var keys []string
	for range 2 {
		d := e.next()
		keys = append(keys, d.cur.Key().String())
	}
	slices.Sort(keys)
	if want := []string{"AuthorizationPolicy edge/allow", "RequestAuthentication edge/jwt"}; !slices.Equal(keys, want) {
		t.Fatalf("delivered %v, want %v", keys, want)
	}
	e.none()
	aps := e.c.List(schema.AuthorizationPolicy, "")
	if len(aps) != 1 || aps[0].Annotations["istio.io/dry-run"] != "true" {
		t.Fatalf("List(AuthorizationPolicy) = %v", aps)
	}
	if spec, ok := aps[0].Spec.(*securityapi.AuthorizationPolicy); !ok || spec.GetRules()[0].GetFrom()[0].GetSource().GetRemoteIpBlocks()[0] != "203.0.113.0/24" {
		t.Fatalf("spec %T %v", aps[0].Spec, aps[0].Spec)
	}
	if ras := e.c.List(schema.RequestAuthentication, "edge"); len(ras) != 1 {
		t.Fatalf("List(RequestAuthentication) = %v", ras)
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Key.String() != "AuthorizationPolicy edge/bad" || errs[0].Field != "spec.rules[0].from[0].source.ipBlocks[1]" {
		t.Fatalf("ConfigErrors = %v", errs)
	}
	for _, k := range []schema.Kind{schema.RequestAuthentication, schema.AuthorizationPolicy} {
		if ref := objectReference(k, &metav1.ObjectMeta{Name: "x"}); ref.APIVersion != "security.istio.io/v1" || ref.Kind != k.String() {
			t.Errorf("event reference %v", ref)
		}
	}
}

// Where the security CRDs are not installed, the other kinds still sync
// and are served, and each missing kind is reported as a warning naming
// its CRD.
func TestMissingSecurityCRDsAreReportedAndOthersServed(t *testing.T) {
	e := newEnv(t, func(_ *Options, client *istiofake.Clientset) {
		for _, res := range []string{"requestauthentications", "authorizationpolicies"} {
			client.PrependReactor("list", res, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewNotFound(k8sschema.GroupResource{Group: "security.istio.io", Resource: res}, "")
			})
		}
	}, vs("default", "ok", "ok.example.com"))
	e.waitSynced()
	if d := e.next(); d.cur.Key().String() != "VirtualService default/ok" {
		t.Fatalf("delivered %s", d.cur.Key())
	}
	var named []string
	for _, err := range e.c.ConfigErrors() {
		if !err.Warning || !strings.Contains(err.Message, "CRD is installed") {
			t.Errorf("not a missing-CRD warning: %v", err)
		}
		named = append(named, err.Key.Kind.String())
	}
	slices.Sort(named)
	if want := []string{"AuthorizationPolicy", "RequestAuthentication"}; !slices.Equal(named, want) {
		t.Fatalf("ConfigErrors name %v, want %v", named, want)
	}
}
