package crdclient

import (
	"context"
	"strings"
	"testing"
	"time"

	telemetryapi "istio.io/api/telemetry/v1alpha1"
	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// A Telemetry is read from telemetry.istio.io/v1 like the networking
// kinds, with its creation time (which istiod orders Telemetries by).
func TestTelemetryIsRead(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, func(_ *Options, client *istiofake.Clientset) {
		_, err := client.TelemetryV1().Telemetries("istio-system").Create(context.Background(), &telemetryv1.Telemetry{
			ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "mesh-default", CreationTimestamp: created},
			Spec:       telemetryapi.Telemetry{AccessLogging: []*telemetryapi.AccessLogging{{Providers: []*telemetryapi.ProviderRef{{Name: "envoy"}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	})
	e.waitSynced()
	d := e.next()
	if d.cur.Key().String() != "Telemetry istio-system/mesh-default" || !d.cur.CreationTimestamp.Equal(created.Time) {
		t.Fatalf("delivered %s created %v", d.cur.Key(), d.cur.CreationTimestamp)
	}
	if spec, ok := d.cur.Spec.(*telemetryapi.Telemetry); !ok || spec.GetAccessLogging()[0].GetProviders()[0].GetName() != "envoy" {
		t.Fatalf("spec %T %v", d.cur.Spec, d.cur.Spec)
	}
	if got := e.c.List(schema.Telemetry, ""); len(got) != 1 {
		t.Fatalf("List(Telemetry) = %v", got)
	}
	if ref := objectReference(schema.Telemetry, &metav1.ObjectMeta{Name: "x"}); ref.APIVersion != "telemetry.istio.io/v1" {
		t.Errorf("event reference apiVersion %q", ref.APIVersion)
	}
}

// Where the Telemetry CRD is not installed (only the networking CRDs were
// applied), the API server answers NotFound: the other kinds still sync
// and are served, and the missing kind is reported as a warning (a cluster without the
// CRD is a valid setup), naming the CRD.
func TestMissingTelemetryCRDIsReportedAndOthersServed(t *testing.T) {
	e := newEnv(t, func(_ *Options, client *istiofake.Clientset) {
		client.PrependReactor("list", "telemetries", func(a k8stesting.Action) (bool, runtime.Object, error) {
			gr := k8sschema.GroupResource{Group: "telemetry.istio.io", Resource: "telemetries"}
			return true, nil, apierrors.NewNotFound(gr, "")
		})
	}, vs("default", "ok", "ok.example.com"))
	e.waitSynced()
	if d := e.next(); d.cur.Key().String() != "VirtualService default/ok" {
		t.Fatalf("delivered %s", d.cur.Key())
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Key.Kind != schema.Telemetry || !errs[0].Warning ||
		!strings.Contains(errs[0].Message, "telemetries.telemetry.istio.io") || !strings.Contains(errs[0].Message, "CRD is installed") {
		t.Fatalf("ConfigErrors = %v, want one naming the Telemetry CRD", errs)
	}
	if !strings.Contains(e.logs.String(), "CRD not installed") {
		t.Errorf("no log line for the missing CRD:\n%s", e.logs.String())
	}
}
