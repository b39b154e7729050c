package validation

import (
	"strings"

	telemetryv1alpha1 "istio.io/api/telemetry/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// telemetry checks a telemetry.istio.io Telemetry by istiod 1.29's
// ValidateTelemetry (pkg/config/validation/validation.go): one way of
// selecting workloads, targetRefs of the kinds istiod allows, provider
// names, the sampling percentage, custom tags and metric overrides.
//
// istiod's warnings (several tracing entries or tracing providers, a
// selector without labels, a tag override without a name) do not reject an
// object there and are not reported here. Where this is stricter than
// istiod it says so: a custom tag that sets no kind of value (istiod
// accepts it and adds no tag), an empty access-log filter expression
// (istiod's CEL parser refuses it; any other expression is left to Envoy),
// selector labels that no workload could carry, and enum values out of
// range (protojson lets a number through).
func (v *validator) telemetry(t *telemetryv1alpha1.Telemetry) {
	v.policySelection("spec", t.GetSelector(), t.GetTargetRef(), t.GetTargetRefs(), allowedTargetRefs)
	for i, m := range t.GetMetrics() {
		v.telemetryMetrics(at("spec.metrics", i), m)
	}
	for i, tr := range t.GetTracing() {
		v.telemetryTracing(at("spec.tracing", i), tr)
	}
	for i, l := range t.GetAccessLogging() {
		v.telemetryAccessLogging(at("spec.accessLogging", i), l)
	}
}

// policySelection is istiod's validateOneOfSelectorType,
// validateWorkloadSelector and validatePolicyTargetReference(s), shared by
// its workload policies.
func (v *validator) policySelection(f string, sel *typev1beta1.WorkloadSelector, ref *typev1beta1.PolicyTargetReference,
	refs []*typev1beta1.PolicyTargetReference, allowed targetKinds,
) {
	set := 0
	for _, b := range []bool{sel != nil, ref != nil, len(refs) > 0} {
		if b {
			set++
		}
	}
	if set > 1 {
		// istiod refuses the object: which one would win is undefined.
		v.add(f, "only one of selector, targetRef and targetRefs may be set")
	}
	if sel != nil {
		for _, k := range sortedKeys(sel.GetMatchLabels()) {
			if k == "" {
				v.add(key(f+".selector.matchLabels", k), "empty label key is not supported in a selector")
			}
		}
		v.selectorLabels(f+".selector.matchLabels", nonEmptyKeys(sel.GetMatchLabels()))
	}
	if ref != nil {
		v.targetRef(f+".targetRef", ref, allowed)
	}
	for i, r := range refs {
		v.targetRef(at(f+".targetRefs", i), r, allowed)
	}
}

// nonEmptyKeys drops the empty key, reported on its own.
func nonEmptyKeys(m map[string]string) map[string]string {
	if _, ok := m[""]; !ok {
		return m
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		if k != "" {
			out[k] = val
		}
	}
	return out
}

// allowedTargetRefs are the group/kind pairs istiod's
// validatePolicyTargetReference allows (the version is not checked). Only a
// Gateway API Gateway selects a gateway proxy; the others pass validation
// as in istiod and select none of Wayfinder's proxies.
var allowedTargetRefs = targetKinds{
	kinds: []groupKind{
		{"", "Service"},
		{"networking.istio.io", "ServiceEntry"},
		{"gateway.networking.k8s.io", "Gateway"},
		{"gateway.networking.k8s.io", "GatewayClass"},
	},
	describe: "a gateway.networking.k8s.io Gateway or GatewayClass, a Service or a networking.istio.io ServiceEntry",
}

// groupKind is a Kubernetes API group ("" for core) and kind.
type groupKind struct{ group, kind string }

// targetKinds are the kinds a policy's targetRefs may name, and how the
// error message names them.
type targetKinds struct {
	kinds    []groupKind
	describe string
}

func (v *validator) targetRef(f string, r *typev1beta1.PolicyTargetReference, allowed targetKinds) {
	if r == nil {
		return
	}
	if r.GetName() == "" {
		v.add(f+".name", "targetRef name must be set")
	}
	if r.GetNamespace() != "" {
		v.add(f+".namespace", "must not be set: cross-namespace references are not supported")
	}
	group := r.GetGroup()
	if group == "core" {
		group = ""
	}
	for _, a := range allowed.kinds {
		if a.group == group && a.kind == r.GetKind() {
			return
		}
	}
	v.add(f, "targetRef must be to %s, but was %q/%q", allowed.describe, r.GetGroup(), r.GetKind())
}

// providers is istiod's validateTelemetryProviders.
func (v *validator) providers(f string, ps []*telemetryv1alpha1.ProviderRef) {
	for i, p := range ps {
		if p.GetName() == "" {
			v.add(at(f, i)+".name", "provider name may not be empty")
		}
	}
}

func (v *validator) telemetryTracing(f string, t *telemetryv1alpha1.Tracing) {
	if t == nil {
		return
	}
	if m := t.GetMatch(); m != nil {
		v.checkEnum(f+".match.mode", telemetryv1alpha1.WorkloadMode_name, int32(m.GetMode()))
	}
	v.providers(f+".providers", t.GetProviders())
	if p := t.GetRandomSamplingPercentage(); p != nil && (p.GetValue() < 0 || p.GetValue() > 100) {
		v.add(f+".randomSamplingPercentage", "%v is out of range: must be in [0.0, 100.0]", p.GetValue())
	}
	tags := t.GetCustomTags()
	for _, name := range sortedKeys(tags) {
		tf := key(f+".customTags", name)
		if name == "" {
			v.add(tf, "tag name may not be empty")
		}
		tag := tags[name]
		if tag == nil {
			v.add(tf, "tag %q may not have a null value", name)
			continue
		}
		switch ty := tag.GetType().(type) {
		case *telemetryv1alpha1.Tracing_CustomTag_Literal:
			if ty.Literal.GetValue() == "" {
				v.add(tf+".literal.value", "literal tag value may not be empty")
			}
		case *telemetryv1alpha1.Tracing_CustomTag_Header:
			if ty.Header.GetName() == "" {
				v.add(tf+".header.name", "header tag name may not be empty")
			}
		case *telemetryv1alpha1.Tracing_CustomTag_Environment:
			if ty.Environment.GetName() == "" {
				v.add(tf+".environment.name", "environment tag name may not be empty")
			}
		case *telemetryv1alpha1.Tracing_CustomTag_Formatter:
		default:
			// Stricter than istiod, which accepts the tag and adds nothing.
			v.add(tf, "tag %q sets no value: want one of literal, header, environment or formatter", name)
		}
	}
}

func (v *validator) telemetryMetrics(f string, m *telemetryv1alpha1.Metrics) {
	if m == nil {
		return
	}
	v.providers(f+".providers", m.GetProviders())
	for i, o := range m.GetOverrides() {
		of := at(f+".overrides", i)
		if o == nil {
			v.add(of, "overrides may not be null")
			continue
		}
		overrides := o.GetTagOverrides()
		for _, name := range sortedKeys(overrides) {
			tf := key(of+".tagOverrides", name)
			to := overrides[name]
			if to == nil {
				v.add(tf, "tagOverrides may not be null")
				continue
			}
			if !v.checkEnum(tf+".operation", telemetryv1alpha1.MetricsOverrides_TagOverride_Operation_name, int32(to.GetOperation())) {
				continue
			}
			switch to.GetOperation() {
			case telemetryv1alpha1.MetricsOverrides_TagOverride_UPSERT:
				if to.GetValue() == "" {
					v.add(tf+".value", "must be set when operation is UPSERT")
				}
			case telemetryv1alpha1.MetricsOverrides_TagOverride_REMOVE:
				if to.GetValue() != "" {
					v.add(tf+".value", "may only be set when operation is UPSERT")
				}
			}
		}
		if mm := o.GetMatch(); mm != nil {
			v.checkEnum(of+".match.mode", telemetryv1alpha1.WorkloadMode_name, int32(mm.GetMode()))
			switch x := mm.GetMetricMatch().(type) {
			case *telemetryv1alpha1.MetricSelector_CustomMetric:
				if x.CustomMetric == "" {
					v.add(of+".match.customMetric", "customMetric may not be empty")
				}
			case *telemetryv1alpha1.MetricSelector_Metric:
				v.checkEnum(of+".match.metric", telemetryv1alpha1.MetricSelector_IstioMetric_name, int32(x.Metric))
			}
		}
	}
}

func (v *validator) telemetryAccessLogging(f string, l *telemetryv1alpha1.AccessLogging) {
	if l == nil {
		return
	}
	if m := l.GetMatch(); m != nil {
		v.checkEnum(f+".match.mode", telemetryv1alpha1.WorkloadMode_name, int32(m.GetMode()))
	}
	if flt := l.GetFilter(); flt != nil && strings.TrimSpace(flt.GetExpression()) == "" {
		// istiod parses the expression with CEL and refuses what does not
		// parse; an empty one is the only case checked without a CEL
		// parser. Any other mistake is Envoy's to report.
		v.add(f+".filter.expression", "must be a valid CEL expression, got an empty one")
	}
	v.providers(f+".providers", l.GetProviders())
}
