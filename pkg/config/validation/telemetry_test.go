package validation_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	telemetry "istio.io/api/telemetry/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

type tel = telemetry.Telemetry

func baseTelemetry() *tel {
	return &tel{
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "ingressgateway"}},
		AccessLogging: []*telemetry.AccessLogging{{
			Providers: []*telemetry.ProviderRef{{Name: "envoy"}},
			Filter:    &telemetry.AccessLogging_Filter{Expression: "response.code >= 400"},
		}},
		Tracing: []*telemetry.Tracing{{
			Providers:                []*telemetry.ProviderRef{{Name: "zipkin"}},
			RandomSamplingPercentage: wrapperspb.Double(10),
			CustomTags: map[string]*telemetry.Tracing_CustomTag{
				"team": {Type: &telemetry.Tracing_CustomTag_Literal{Literal: &telemetry.Tracing_Literal{Value: "edge"}}},
			},
		}},
	}
}

func gatewayRef(name string) *typev1beta1.PolicyTargetReference {
	return &typev1beta1.PolicyTargetReference{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: name}
}

func customTag(tag *telemetry.Tracing_CustomTag) func(*tel) {
	return func(t *tel) { t.Tracing[0].CustomTags = map[string]*telemetry.Tracing_CustomTag{"t": tag} }
}

// TestTelemetry follows istiod 1.29's ValidateTelemetry rule by rule; the
// cases marked "stricter" are where Wayfinder refuses what istiod accepts.
func TestTelemetry(t *testing.T) {
	runCases(t, schema.Telemetry, baseTelemetry, []testCase[tel]{
		{name: "base is valid"},
		{name: "empty spec is valid", mutate: func(t *tel) { *t = tel{} }},

		// validateOneOfSelectorType.
		{name: "selector and targetRefs", mutate: func(t *tel) { t.TargetRefs = []*typev1beta1.PolicyTargetReference{gatewayRef("gw")} },
			want: []string{"spec"}, msg: "only one of selector, targetRef and targetRefs"},
		{name: "selector and targetRef", mutate: func(t *tel) { t.TargetRef = gatewayRef("gw") },
			want: []string{"spec"}, msg: "only one of"},
		{name: "targetRefs alone", mutate: func(t *tel) {
			t.Selector = nil
			t.TargetRefs = []*typev1beta1.PolicyTargetReference{gatewayRef("gw"), gatewayRef("other")}
		}},

		// validateWorkloadSelector.
		{name: "selector wildcard", mutate: func(t *tel) { t.Selector.MatchLabels = map[string]string{"app": "gw-*"} },
			want: []string{`spec.selector.matchLabels["app"]`}, msg: "wildcards"},
		{name: "selector empty key", mutate: func(t *tel) { t.Selector.MatchLabels = map[string]string{"": "x"} },
			want: []string{`spec.selector.matchLabels[""]`}, msg: "empty label key"},
		{name: "selector without labels is only a warning in istiod", mutate: func(t *tel) { t.Selector.MatchLabels = nil }},

		// validatePolicyTargetReference(s).
		{name: "targetRef to a Gateway API Gateway", mutate: func(t *tel) { t.Selector = nil; t.TargetRef = gatewayRef("gw") }},
		{name: "targetRefs to the kinds istiod allows", mutate: func(t *tel) {
			t.Selector = nil
			t.TargetRefs = []*typev1beta1.PolicyTargetReference{
				{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Name: "wayfinder"},
				{Kind: "Service", Name: "svc"},
				{Group: "core", Kind: "Service", Name: "svc2"},
				{Group: "networking.istio.io", Kind: "ServiceEntry", Name: "se"},
			}
		}},
		{name: "targetRef to an Istio Gateway", mutate: func(t *tel) {
			t.Selector = nil
			t.TargetRefs = []*typev1beta1.PolicyTargetReference{{Group: "networking.istio.io", Kind: "Gateway", Name: "gw"}}
		}, want: []string{"spec.targetRefs[0]"}, msg: `"networking.istio.io"/"Gateway"`},
		{name: "targetRef to an HTTPRoute", mutate: func(t *tel) {
			t.Selector = nil
			t.TargetRef = &typev1beta1.PolicyTargetReference{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "r"}
		}, want: []string{"spec.targetRef"}, msg: "targetRef must be to"},
		{name: "targetRef without name", mutate: func(t *tel) {
			t.Selector = nil
			t.TargetRefs = []*typev1beta1.PolicyTargetReference{gatewayRef("")}
		}, want: []string{"spec.targetRefs[0].name"}, msg: "name must be set"},
		{name: "targetRef across namespaces", mutate: func(t *tel) {
			t.Selector = nil
			r := gatewayRef("gw")
			r.Namespace = "other"
			t.TargetRefs = []*typev1beta1.PolicyTargetReference{r}
		}, want: []string{"spec.targetRefs[0].namespace"}, msg: "cross-namespace"},

		// validateTelemetryProviders.
		{name: "access log provider without name", mutate: func(t *tel) {
			t.AccessLogging[0].Providers = append(t.AccessLogging[0].Providers, &telemetry.ProviderRef{})
		}, want: []string{"spec.accessLogging[0].providers[1].name"}, msg: "may not be empty"},
		{name: "null access log provider", mutate: func(t *tel) { t.AccessLogging[0].Providers = []*telemetry.ProviderRef{nil} },
			want: []string{"spec.accessLogging[0].providers[0].name"}, msg: "may not be empty"},
		{name: "tracing provider without name", mutate: func(t *tel) { t.Tracing[0].Providers = []*telemetry.ProviderRef{{}} },
			want: []string{"spec.tracing[0].providers[0].name"}, msg: "may not be empty"},
		{name: "metrics provider without name", mutate: func(t *tel) {
			t.Metrics = []*telemetry.Metrics{{Providers: []*telemetry.ProviderRef{{Name: ""}}}}
		}, want: []string{"spec.metrics[0].providers[0].name"}, msg: "may not be empty"},
		{name: "several tracing providers are only a warning in istiod", mutate: func(t *tel) {
			t.Tracing[0].Providers = append(t.Tracing[0].Providers, &telemetry.ProviderRef{Name: "datadog"})
			t.Tracing = append(t.Tracing, &telemetry.Tracing{})
		}},

		// validateTelemetryTracing.
		{name: "sampling above 100", mutate: func(t *tel) { t.Tracing[0].RandomSamplingPercentage = wrapperspb.Double(100.5) },
			want: []string{"spec.tracing[0].randomSamplingPercentage"}, msg: "[0.0, 100.0]"},
		{name: "sampling below 0", mutate: func(t *tel) { t.Tracing[0].RandomSamplingPercentage = wrapperspb.Double(-1) },
			want: []string{"spec.tracing[0].randomSamplingPercentage"}, msg: "-1 is out of range"},
		{name: "sampling 0 and 100", mutate: func(t *tel) {
			t.Tracing[0].RandomSamplingPercentage = wrapperspb.Double(0)
			t.Tracing = append(t.Tracing, &telemetry.Tracing{RandomSamplingPercentage: wrapperspb.Double(100)})
		}},
		{name: "tag with empty name", mutate: func(t *tel) {
			t.Tracing[0].CustomTags[""] = t.Tracing[0].CustomTags["team"]
		}, want: []string{`spec.tracing[0].customTags[""]`}, msg: "tag name may not be empty"},
		{name: "null tag", mutate: customTag(nil),
			want: []string{`spec.tracing[0].customTags["t"]`}, msg: "null value"},
		{name: "stricter: tag with no kind", mutate: customTag(&telemetry.Tracing_CustomTag{}),
			want: []string{`spec.tracing[0].customTags["t"]`}, msg: "want one of literal, header, environment or formatter"},
		{name: "empty literal", mutate: customTag(&telemetry.Tracing_CustomTag{
			Type: &telemetry.Tracing_CustomTag_Literal{Literal: &telemetry.Tracing_Literal{}}}),
			want: []string{`spec.tracing[0].customTags["t"].literal.value`}, msg: "literal tag value may not be empty"},
		{name: "header without name", mutate: customTag(&telemetry.Tracing_CustomTag{
			Type: &telemetry.Tracing_CustomTag_Header{Header: &telemetry.Tracing_RequestHeader{DefaultValue: "x"}}}),
			want: []string{`spec.tracing[0].customTags["t"].header.name`}, msg: "header tag name may not be empty"},
		{name: "environment without name", mutate: customTag(&telemetry.Tracing_CustomTag{
			Type: &telemetry.Tracing_CustomTag_Environment{Environment: &telemetry.Tracing_Environment{}}}),
			want: []string{`spec.tracing[0].customTags["t"].environment.name`}, msg: "environment tag name may not be empty"},
		{name: "header and environment tags", mutate: func(t *tel) {
			t.Tracing[0].CustomTags["h"] = &telemetry.Tracing_CustomTag{
				Type: &telemetry.Tracing_CustomTag_Header{Header: &telemetry.Tracing_RequestHeader{Name: "x-team"}}}
			t.Tracing[0].CustomTags["e"] = &telemetry.Tracing_CustomTag{
				Type: &telemetry.Tracing_CustomTag_Environment{Environment: &telemetry.Tracing_Environment{Name: "POD_NAME"}}}
		}},
		{name: "tracing mode out of range", mutate: func(t *tel) { t.Tracing[0].Match = &telemetry.Tracing_TracingSelector{Mode: 9} },
			want: []string{"spec.tracing[0].match.mode"}, msg: "not a known value"},

		// validateTelemetryMetrics.
		{name: "null override", mutate: func(t *tel) { t.Metrics = []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{nil}}} },
			want: []string{"spec.metrics[0].overrides[0]"}, msg: "may not be null"},
		{name: "null tag override", mutate: func(t *tel) {
			t.Metrics = []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{{
				TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{"a": nil}}}}}
		}, want: []string{`spec.metrics[0].overrides[0].tagOverrides["a"]`}, msg: "may not be null"},
		{name: "upsert without value", mutate: func(t *tel) {
			t.Metrics = []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{{
				TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{"a": {Operation: telemetry.MetricsOverrides_TagOverride_UPSERT}}}}}}
		}, want: []string{`spec.metrics[0].overrides[0].tagOverrides["a"].value`}, msg: "must be set when operation is UPSERT"},
		{name: "remove with value", mutate: func(t *tel) {
			t.Metrics = []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{{
				TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{"a": {Operation: telemetry.MetricsOverrides_TagOverride_REMOVE, Value: "x"}}}}}}
		}, want: []string{`spec.metrics[0].overrides[0].tagOverrides["a"].value`}, msg: "may only be set when operation is UPSERT"},
		{name: "empty custom metric", mutate: func(t *tel) {
			t.Metrics = []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{{
				Match: &telemetry.MetricSelector{MetricMatch: &telemetry.MetricSelector_CustomMetric{}}}}}}
		}, want: []string{"spec.metrics[0].overrides[0].match.customMetric"}, msg: "may not be empty"},
		{name: "metric overrides", mutate: func(t *tel) {
			t.Metrics = []*telemetry.Metrics{{Providers: []*telemetry.ProviderRef{{Name: "prometheus"}}, Overrides: []*telemetry.MetricsOverrides{{
				Match: &telemetry.MetricSelector{MetricMatch: &telemetry.MetricSelector_Metric{Metric: telemetry.MetricSelector_REQUEST_COUNT}},
				TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{
					"a": {Value: "request.host"}, "b": {Operation: telemetry.MetricsOverrides_TagOverride_REMOVE}},
			}}}}
		}},

		// validateTelemetryFilter, without a CEL parser.
		{name: "stricter: empty filter expression", mutate: func(t *tel) { t.AccessLogging[0].Filter.Expression = " " },
			want: []string{"spec.accessLogging[0].filter.expression"}, msg: "valid CEL expression"},
		{name: "access log disabled without providers", mutate: func(t *tel) {
			t.AccessLogging = []*telemetry.AccessLogging{{Disabled: wrapperspb.Bool(true)}}
		}},

		// Every problem is reported, each at its field.
		{name: "several problems", mutate: func(t *tel) {
			t.TargetRefs = []*typev1beta1.PolicyTargetReference{{Kind: "Pod", Name: "p"}}
			t.Tracing[0].RandomSamplingPercentage = wrapperspb.Double(101)
			t.AccessLogging[0].Providers = []*telemetry.ProviderRef{{}}
		}, want: []string{"spec", "spec.targetRefs[0]", "spec.tracing[0].randomSamplingPercentage",
			"spec.accessLogging[0].providers[0].name"}, msg: "only one of"},
	})
}
