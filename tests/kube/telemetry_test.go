package kube

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	telemetryapi "istio.io/api/telemetry/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"
	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	telemetryv1alpha1 "istio.io/client-go/pkg/apis/telemetry/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Telemetry objects on a real API server: a valid one (written as
// telemetry.istio.io/v1) and one written as v1alpha1 reach the push
// context and /debug/configz; an invalid one is not served, is named with
// its field in /debug/configz, and gets the Valid=False status every
// invalid Istio object gets. Fixing it clears the status.
func TestTelemetryFromKubernetes(t *testing.T) {
	c, ns := newCluster(t, "telemetry")
	e := clientEnv(t, c, ns)
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})
	tv1 := e.istio.TelemetryV1().Telemetries(ns)

	_, err := tv1.Create(ctx, &telemetryv1.Telemetry{
		ObjectMeta: metav1.ObjectMeta{Name: "access-logs"},
		Spec: telemetryapi.Telemetry{
			AccessLogging: []*telemetryapi.AccessLogging{{Providers: []*telemetryapi.ProviderRef{{Name: "envoy"}}}},
		},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = e.istio.TelemetryV1alpha1().Telemetries(ns).Create(ctx, &telemetryv1alpha1.Telemetry{
		ObjectMeta: metav1.ObjectMeta{Name: "old-api"},
		Spec: telemetryapi.Telemetry{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "ingressgateway"}},
			Tracing:  []*telemetryapi.Tracing{{RandomSamplingPercentage: wrapperspb.Double(5)}},
		},
	}, metav1.CreateOptions{})
	e.must(err)
	// The CRD's schema refuses a sampling percentage out of range; a
	// targetRef to an HTTPRoute passes it and fails istiod's validation.
	_, err = tv1.Create(ctx, &telemetryv1.Telemetry{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-ref"},
		Spec: telemetryapi.Telemetry{
			TargetRefs: []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "shop"}},
			Tracing:    []*telemetryapi.Tracing{{RandomSamplingPercentage: wrapperspb.Double(40)}},
		},
	}, metav1.CreateOptions{})
	e.must(err)

	token := debugAdminToken(t, ns)
	configz := func() debugapi.Configz {
		var cz debugapi.Configz
		req, err := http.NewRequest(http.MethodGet, "http://"+e.server.HTTPAddr().String()+"/debug/configz", nil)
		e.must(err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		e.must(err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		e.must(err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/debug/configz: %s: %s", resp.Status, body)
		}
		e.must(json.Unmarshal(body, &cz))
		return cz
	}
	served := func(cz debugapi.Configz, name string) bool {
		return slices.ContainsFunc(cz.Configs, func(o debugapi.ConfigzObject) bool {
			return o.Kind == "Telemetry" && o.Namespace == ns && o.Name == name
		})
	}
	poll.Seen(t, "both valid Telemetries in configz and the invalid one reported", func() (string, bool) {
		cz := configz()
		named := slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
			return ce.Kind == "Telemetry" && ce.Name == "bad-ref" && ce.Field == "spec.targetRefs[0]"
		})
		return fmt.Sprintf("configs %+v errors %+v", cz.Configs, cz.Errors),
			served(cz, "access-logs") && served(cz, "old-api") && !served(cz, "bad-ref") && named
	}, apiPoll...)

	valid := func(s *metav1alpha1.IstioStatus) string {
		for _, c := range s.GetConditions() {
			if c.GetType() == status.ConditionValid {
				return c.GetStatus() + "/" + c.GetReason() + ": " + c.GetMessage()
			}
		}
		return ""
	}
	waitStatus := func(name, what string, cond func(string) bool) {
		t.Helper()
		poll.Seen(t, "Telemetry "+name+": "+what, func() (string, bool) {
			tm, err := tv1.Get(ctx, name, metav1.GetOptions{})
			e.must(err)
			return valid(&tm.Status), cond(valid(&tm.Status))
		}, apiPoll...)
	}
	waitStatus("bad-ref", "Valid=False naming the field", func(v string) bool {
		return strings.HasPrefix(v, "False/Invalid") && strings.Contains(v, "spec.targetRefs[0]")
	})
	waitStatus("access-logs", "Valid=True", func(v string) bool { return strings.HasPrefix(v, "True/Valid") })

	// The fix is served and its status cleared.
	bad, err := tv1.Get(ctx, "bad-ref", metav1.GetOptions{})
	e.must(err)
	bad.Spec.TargetRefs[0].Kind = "Gateway"
	_, err = tv1.Update(ctx, bad, metav1.UpdateOptions{})
	e.must(err)
	poll.Seen(t, "the fixed Telemetry served", func() (string, bool) {
		cz := configz()
		return fmt.Sprintf("%+v", cz.Configs), served(cz, "bad-ref")
	}, apiPoll...)
	waitStatus("bad-ref", "Valid=True after the fix", func(v string) bool { return strings.HasPrefix(v, "True/Valid") })
}
