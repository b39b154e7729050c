package status

import (
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// An invalid RequestAuthentication or AuthorizationPolicy gets the status
// of any invalid Istio object (Valid False naming the field), and a valid
// one Valid True, written to the status subresource of security.istio.io.
func TestIstioWriterWritesSecurityStatus(t *testing.T) {
	client := istiofake.NewSimpleClientset(
		&securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "bad", Generation: 2}},
		&securityv1.RequestAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "jwt", Generation: 1}},
	)
	apKey := config.Key{Kind: schema.AuthorizationPolicy, Namespace: "edge", Name: "bad"}
	raKey := config.Key{Kind: schema.RequestAuthentication, Namespace: "edge", Name: "jwt"}
	state := map[config.Key]*model.ObjectState{
		apKey: {Errors: []*config.Error{{Key: apKey, Field: "spec.rules[0].from[0].source.ipBlocks[1]", Message: "bad CIDR range 10.0.0.0/33"}}},
		raKey: {},
	}
	writes := map[string]int{}
	for _, res := range []string{"authorizationpolicies", "requestauthentications"} {
		client.PrependReactor("update", res, func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" {
				writes[res]++
			}
			return false, nil, nil
		})
	}
	w, ctx := newTelemetryWriter(t, client, state)
	if !cache.WaitForCacheSync(ctx.Done(), w.factories[0].AuthorizationPolicies().Informer().HasSynced,
		w.factories[0].RequestAuthentications().Informer().HasSynced) {
		t.Fatal("security informers never synced")
	}
	if err := w.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	ap, err := client.SecurityV1().AuthorizationPolicies("edge").Get(ctx, "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := condition(&ap.Status, ConditionValid)
	if writes["authorizationpolicies"] != 1 || v.Status != "False" || !strings.Contains(v.Message, "spec.rules[0].from[0].source.ipBlocks[1]") ||
		ap.Status.ObservedGeneration != 2 {
		t.Fatalf("%v status writes; AuthorizationPolicy Valid = %v, observedGeneration %d", writes, v, ap.Status.ObservedGeneration)
	}
	ra, err := client.SecurityV1().RequestAuthentications("edge").Get(ctx, "jwt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := condition(&ra.Status, ConditionValid); writes["requestauthentications"] != 1 || v.Status != "True" {
		t.Fatalf("%v status writes; RequestAuthentication Valid = %v", writes, v)
	}
}

// Where the security CRDs are not installed, the other kinds' status is
// still written: the writer does not wait for their informers.
func TestIstioWriterDoesNotWaitForSecurityCRDs(t *testing.T) {
	client := istiofake.NewSimpleClientset()
	for _, res := range []string{"authorizationpolicies", "requestauthentications"} {
		client.PrependReactor("list", res, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(k8sschema.GroupResource{Group: "security.istio.io", Resource: res}, "")
		})
	}
	w, ctx := newTelemetryWriter(t, client, nil)
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		t.Fatal("the networking informers never synced")
	}
	if w.factories[0].AuthorizationPolicies().Informer().HasSynced() || w.factories[0].RequestAuthentications().Informer().HasSynced() {
		t.Fatal("a security informer synced although listing fails")
	}
	if err := w.syncAll(ctx); err != nil {
		t.Fatalf("a pass without the security CRDs: %v", err)
	}
}
