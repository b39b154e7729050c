package kube

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	cfgschema "github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// EnvoyFilters on a real API server, at networking.istio.io/v1alpha3 (the
// only version Istio's CRD serves): the valid one (Istio's local rate
// limit task) reaches /debug/configz with its patch value intact and gets
// Valid=True; an invalid one (an HTTP_FILTER whose value is a cluster)
// passes the CRD's schema but not Wayfinder's validation, is not served,
// is named with its field in /debug/configz and gets Valid=False naming
// the field; fixing it serves it and clears the status.
func TestEnvoyFiltersFromKubernetes(t *testing.T) {
	c, ns := newCluster(t, "envoyfilter")
	e := clientEnv(t, c, ns)
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})
	efs := e.istio.NetworkingV1alpha3().EnvoyFilters(ns)

	// setSpec replaces spec with the YAML y.
	setSpec := func(spec *networkingapi.EnvoyFilter, y string) {
		t.Helper()
		js, err := yaml.YAMLToJSON([]byte(y))
		e.must(err)
		spec.Reset()
		e.must(json.Unmarshal(js, spec))
	}
	filter := func(name, y string) *networkingv1alpha3.EnvoyFilter {
		o := &networkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Name: name}}
		setSpec(&o.Spec, y)
		return o
	}
	_, err := efs.Create(ctx, filter("local-ratelimit", `
workloadSelector: {labels: {istio: ingressgateway}}
configPatches:
- applyTo: HTTP_FILTER
  match:
    context: GATEWAY
    listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}
  patch:
    operation: INSERT_BEFORE
    value:
      name: envoy.filters.http.local_ratelimit
      typed_config:
        "@type": type.googleapis.com/udpa.type.v1.TypedStruct
        type_url: type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
        value: {stat_prefix: http_local_rate_limiter}
`), metav1.CreateOptions{})
	e.must(err)
	const badField = "spec.configPatches[1].patch.value"
	_, err = efs.Create(ctx, filter("bad-value", `
configPatches:
- applyTo: CLUSTER
  match: {context: GATEWAY, cluster: {service: backend.example.com}}
  patch: {operation: REMOVE}
- applyTo: HTTP_FILTER
  patch:
    operation: ADD
    value: {name: c, connect_timeout: 1s, type: STRICT_DNS}
`), metav1.CreateOptions{})
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
			return o.Kind == "EnvoyFilter" && o.Namespace == ns && o.Name == name
		})
	}
	named := func(cz debugapi.Configz, name, field string) bool {
		return slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
			return ce.Kind == "EnvoyFilter" && ce.Name == name && ce.Field == field
		})
	}
	poll.Seen(t, "the valid EnvoyFilter in configz and the invalid one reported", func() (string, bool) {
		cz := configz()
		return fmt.Sprintf("configs %+v errors %+v", cz.Configs, cz.Errors),
			served(cz, "local-ratelimit") && !served(cz, "bad-value") && named(cz, "bad-value", badField)
	}, apiPoll...)
	got := e.server.Store().Get(cfgschema.EnvoyFilter, ns, "local-ratelimit")
	if s, ok := got.Spec.(*networkingapi.EnvoyFilter); !ok ||
		s.GetConfigPatches()[0].GetPatch().GetValue().GetFields()["typed_config"].GetStructValue().GetFields()["type_url"].GetStringValue() !=
			"type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit" {
		t.Fatalf("the served EnvoyFilter lost its patch value: %v", got)
	}

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
		poll.Seen(t, "EnvoyFilter "+name+": "+what, func() (string, bool) {
			o, err := efs.Get(ctx, name, metav1.GetOptions{})
			e.must(err)
			v := valid(&o.Status)
			return v, cond(v)
		}, apiPoll...)
	}
	isValid := func(v string) bool { return strings.HasPrefix(v, "True/Valid") }
	waitStatus("bad-value", "Valid=False naming the field", func(v string) bool {
		return strings.HasPrefix(v, "False/Invalid") && strings.Contains(v, badField)
	})
	waitStatus("local-ratelimit", "Valid=True", isValid)

	// The fix is served and its status cleared.
	bad, err := efs.Get(ctx, "bad-value", metav1.GetOptions{})
	e.must(err)
	setSpec(&bad.Spec, `
configPatches:
- applyTo: CLUSTER
  match: {context: GATEWAY, cluster: {service: backend.example.com}}
  patch: {operation: REMOVE}
- applyTo: HTTP_FILTER
  patch:
    operation: ADD
    value:
      name: envoy.filters.http.buffer
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer, max_request_bytes: 1024}
`)
	_, err = efs.Update(ctx, bad, metav1.UpdateOptions{})
	e.must(err)
	poll.Seen(t, "the fixed EnvoyFilter served", func() (string, bool) {
		cz := configz()
		return fmt.Sprintf("%+v %+v", cz.Configs, cz.Errors), served(cz, "bad-value") && !named(cz, "bad-value", badField)
	}, apiPoll...)
	waitStatus("bad-value", "Valid=True after the fix", isValid)
}
