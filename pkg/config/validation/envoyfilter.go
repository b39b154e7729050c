package validation

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/xds"
)

// protojsonPosition is the "proto: (line 1:13): " prefix of protojson's
// errors.
var protojsonPosition = regexp.MustCompile(`^proto:\s*(\(line \d+:\d+\):\s*)?`)

// maxEnvoyFilterTargetRefs is the CRD's maxItems for spec.targetRefs.
const maxEnvoyFilterTargetRefs = 16

// hcmFilterName and its deprecated alias are the names a sub-filter
// match's filter must have: only the HTTP connection manager has HTTP
// filters.
const (
	hcmFilterName           = "envoy.filters.network.http_connection_manager"
	hcmFilterNameDeprecated = "envoy.http_connection_manager"
)

// envoyFilterOps are the operations istiod 1.29's patcher
// (pilot/pkg/networking/core/envoyfilter) performs for each applyTo, after
// its convertToEnvoyFilterWrapper turns INSERT_* into ADD where there is
// no order to insert into (listeners, filter chains, clusters, virtual
// hosts). Any other combination is silently ignored by istiod; here it is
// an error, since a patch that can never do anything is a mistake.
var envoyFilterOps = map[networking.EnvoyFilter_ApplyTo][]networking.EnvoyFilter_Patch_Operation{
	networking.EnvoyFilter_LISTENER:            {merge, add, remove, insertBefore, insertAfter, insertFirst},
	networking.EnvoyFilter_FILTER_CHAIN:        {merge, add, remove, insertBefore, insertAfter, insertFirst},
	networking.EnvoyFilter_NETWORK_FILTER:      {merge, add, remove, insertBefore, insertAfter, insertFirst, replace},
	networking.EnvoyFilter_HTTP_FILTER:         {merge, add, remove, insertBefore, insertAfter, insertFirst, replace},
	networking.EnvoyFilter_LISTENER_FILTER:     {merge, add, remove, insertBefore, insertAfter, insertFirst, replace},
	networking.EnvoyFilter_ROUTE_CONFIGURATION: {merge},
	networking.EnvoyFilter_VIRTUAL_HOST:        {merge, add, remove, replace, insertBefore, insertAfter, insertFirst},
	networking.EnvoyFilter_HTTP_ROUTE:          {merge, add, remove, insertBefore, insertAfter, insertFirst},
	networking.EnvoyFilter_CLUSTER:             {merge, add, remove, insertBefore, insertAfter, insertFirst},
	networking.EnvoyFilter_EXTENSION_CONFIG:    {add, insertBefore, insertAfter, insertFirst},
	networking.EnvoyFilter_BOOTSTRAP:           {merge},
}

const (
	merge        = networking.EnvoyFilter_Patch_MERGE
	add          = networking.EnvoyFilter_Patch_ADD
	remove       = networking.EnvoyFilter_Patch_REMOVE
	insertBefore = networking.EnvoyFilter_Patch_INSERT_BEFORE
	insertAfter  = networking.EnvoyFilter_Patch_INSERT_AFTER
	insertFirst  = networking.EnvoyFilter_Patch_INSERT_FIRST
	replace      = networking.EnvoyFilter_Patch_REPLACE
)

// envoyFilter checks a networking.istio.io EnvoyFilter by istiod 1.29's
// ValidateEnvoyFilter (pkg/config/validation/envoyfilter) and the CRD's
// rules: the workload selector, one of workloadSelector and targetRefs,
// and per config patch an applyTo, a patch with an operation, a value for
// every operation but REMOVE, a proxyVersion that compiles, a match of the
// class its applyTo needs (listener, route configuration, cluster), filter
// and sub-filter matches with names (a sub-filter only under the HTTP
// connection manager, only for HTTP_FILTER), and a value that decodes as
// the Envoy message of its applyTo with every "@type" known.
//
// istiod's warnings (a selector without labels, a filter match with
// LISTENER or FILTER_CHAIN, deprecated filter names and frozen type URLs,
// filters without typed_config) do not reject an object there and are
// not errors here: EnvoyFilterWarnings reports them. Stricter than istiod, because each of these is a
// patch that silently does nothing or that Envoy would reject:
//   - an operation istiod's patcher never performs for the applyTo
//     (REPLACE of a CLUSTER, ADD of a ROUTE_CONFIGURATION, and
//     MERGE_AND_REPLACE_LIST, which istiod 1.29 does not apply);
//   - a value with a field its Envoy message does not have (istiod warns
//     and drops the field): a value written for another applyTo decodes
//     to an almost empty message otherwise;
//   - a value that inserts a whole object (ADD, INSERT_*, REPLACE) and
//     fails the Envoy API's own constraints (protoc-gen-validate), typed
//     configs and TypedStruct values included;
//   - enum values outside their declared set.
//
// Patches of context WAYPOINT are skipped, as istiod does: they never
// apply to a gateway.
func (v *validator) envoyFilter(ef *networking.EnvoyFilter) {
	if sel := ef.GetWorkloadSelector(); sel != nil {
		labels := sel.GetLabels()
		if _, ok := labels[""]; ok {
			v.add(key("spec.workloadSelector.labels", ""), "empty label key is not supported in a selector")
		}
		v.selectorLabels("spec.workloadSelector.labels", nonEmptyKeys(labels))
		if len(ef.GetTargetRefs()) > 0 {
			v.add("spec", "only one of workloadSelector and targetRefs may be set")
		}
	}
	if n := len(ef.GetTargetRefs()); n > maxEnvoyFilterTargetRefs {
		v.add("spec.targetRefs", "%d targetRefs; at most %d are allowed", n, maxEnvoyFilterTargetRefs)
	}
	for i, r := range ef.GetTargetRefs() {
		v.targetRef(at("spec.targetRefs", i), r, allowedTargetRefs)
	}
	for i, cp := range ef.GetConfigPatches() {
		v.envoyFilterPatch(at("spec.configPatches", i), cp)
	}
}

func (v *validator) envoyFilterPatch(f string, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) {
	if cp == nil {
		v.add(f, "config patch must not be null")
		return
	}
	m := cp.GetMatch()
	if !v.checkEnum(f+".match.context", networking.EnvoyFilter_PatchContext_name, int32(m.GetContext())) {
		return
	}
	if m.GetContext() == networking.EnvoyFilter_WAYPOINT {
		return // istiod does not validate these; they never reach a gateway
	}
	applyTo := cp.GetApplyTo()
	if !v.checkEnum(f+".applyTo", networking.EnvoyFilter_ApplyTo_name, int32(applyTo)) {
		return
	}
	if applyTo == networking.EnvoyFilter_INVALID {
		v.add(f+".applyTo", "applyTo is required")
		return
	}
	p := cp.GetPatch()
	if p == nil {
		v.add(f+".patch", "patch is required")
		return
	}
	op := p.GetOperation()
	if !v.checkEnum(f+".patch.operation", networking.EnvoyFilter_Patch_Operation_name, int32(op)) {
		return
	}
	if op == networking.EnvoyFilter_Patch_INVALID {
		v.add(f+".patch.operation", "operation is required")
		return
	}
	if op != networking.EnvoyFilter_Patch_REMOVE && p.GetValue() == nil {
		v.add(f+".patch.value", "value is required for operation %v (only REMOVE takes none)", op)
		return
	}
	v.checkEnum(f+".patch.filterClass", networking.EnvoyFilter_Patch_FilterClass_name, int32(p.GetFilterClass()))
	if pv := m.GetProxy().GetProxyVersion(); pv != "" {
		if _, err := regexp.Compile(pv); err != nil {
			v.add(f+".match.proxy.proxyVersion", "invalid regex: %v", err)
			return
		}
	}
	if !v.envoyFilterOperation(f, applyTo, op) {
		return
	}
	if !v.envoyFilterMatch(f, applyTo, m) {
		return
	}
	v.envoyFilterValue(f+".patch.value", applyTo, op, p.GetValue())
}

// envoyFilterOperation reports an operation the patcher never performs
// for applyTo.
func (v *validator) envoyFilterOperation(f string, applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation) bool {
	ops := envoyFilterOps[applyTo]
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = o.String()
	}
	v.add(f+".patch.operation", "operation %v does nothing for applyTo %v (istiod ignores it); use one of %s",
		op, applyTo, strings.Join(names, ", "))
	return false
}

// envoyFilterMatch is istiod's check that applyTo and the match's object
// type line up, and its filter and sub-filter match rules.
func (v *validator) envoyFilterMatch(f string, applyTo networking.EnvoyFilter_ApplyTo, m *networking.EnvoyFilter_EnvoyConfigObjectMatch) bool {
	if m.GetRouteConfiguration() != nil {
		v.checkEnum(f+".match.routeConfiguration.vhost.route.action", networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_Action_name,
			int32(m.GetRouteConfiguration().GetVhost().GetRoute().GetAction()))
	}
	if m.GetObjectTypes() == nil {
		return true
	}
	switch applyTo {
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN,
		networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER:
		lm := m.GetListener()
		if lm == nil {
			v.add(f+".match", "applyTo %v needs a listener match (match.listener), not %s", applyTo, matchKind(m))
			return false
		}
		fm := lm.GetFilterChain().GetFilter()
		if fm == nil {
			return true
		}
		ff := f + ".match.listener.filterChain.filter"
		if fm.GetName() == "" {
			v.add(ff+".name", "a filter match needs the name of the filter to match")
			return false
		}
		if sm := fm.GetSubFilter(); sm != nil {
			switch {
			case applyTo != networking.EnvoyFilter_HTTP_FILTER:
				v.add(ff+".subFilter", "a subFilter match can only be used with applyTo HTTP_FILTER, not %v", applyTo)
				return false
			case fm.GetName() != hcmFilterName && fm.GetName() != hcmFilterNameDeprecated:
				v.add(ff+".name", "a subFilter match needs the filter match to name %s, not %q", hcmFilterName, fm.GetName())
				return false
			case sm.GetName() == "":
				v.add(ff+".subFilter.name", "a subFilter match needs the name of the HTTP filter to match")
				return false
			}
		}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_HTTP_ROUTE:
		if m.GetRouteConfiguration() == nil {
			v.add(f+".match", "applyTo %v needs a route configuration match (match.routeConfiguration), not %s", applyTo, matchKind(m))
			return false
		}
	case networking.EnvoyFilter_CLUSTER:
		if m.GetCluster() == nil {
			v.add(f+".match", "applyTo %v needs a cluster match (match.cluster), not %s", applyTo, matchKind(m))
			return false
		}
	}
	return true
}

func matchKind(m *networking.EnvoyFilter_EnvoyConfigObjectMatch) string {
	switch {
	case m.GetListener() != nil:
		return "a listener match"
	case m.GetRouteConfiguration() != nil:
		return "a route configuration match"
	case m.GetCluster() != nil:
		return "a cluster match"
	case m.GetWaypoint() != nil:
		return "a waypoint match"
	}
	return "another match"
}

// envoyFilterValue checks that value decodes as the Envoy message of
// applyTo, as istiod's BuildXDSObjectFromStruct does, naming every
// "@type" no registered type has; then, beyond istiod, that it has no
// field the message lacks and, for a whole object, that it meets the
// Envoy API's constraints.
func (v *validator) envoyFilterValue(f string, applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation, value *structpb.Struct) {
	if value == nil {
		return // REMOVE
	}
	if unknown := unknownTypes(f, value.GetFields()); len(unknown) > 0 {
		for _, u := range unknown {
			v.add(u.field, "unknown @type %q: not an Envoy API type Wayfinder knows (a typo, a v2 type, or an extension newer than its Envoy API)", u.url)
		}
		return
	}
	var obj proto.Message
	var err error
	if applyTo == networking.EnvoyFilter_BOOTSTRAP {
		obj = &bootstrapv3.Bootstrap{}
		err = xds.StructToMessage(value, obj, true)
	} else {
		obj, err = xds.BuildXDSObjectFromStruct(applyTo, value, true)
	}
	if err != nil {
		// protojson's position is in the JSON the value was re-encoded
		// to, not in the user's file: left out.
		msg := protojsonPosition.ReplaceAllString(err.Error(), "")
		v.add(f, "not a valid %s for applyTo %v: %s", envoyTypeName(applyTo), applyTo, msg)
		return
	}
	if op == networking.EnvoyFilter_Patch_MERGE {
		return // a partial object: only the merged result can be checked
	}
	if err := validateEnvoy(obj); err != nil {
		v.add(f, "not a valid %s for applyTo %v: %v", envoyTypeName(applyTo), applyTo, err)
		return
	}
	// protoc-gen-validate does not look into Any: check each typed config.
	if err := validateAnys(obj.ProtoReflect()); err != nil {
		v.add(f, "not a valid %s for applyTo %v: %v", envoyTypeName(applyTo), applyTo, err)
	}
}

func envoyTypeName(applyTo networking.EnvoyFilter_ApplyTo) string {
	if applyTo == networking.EnvoyFilter_BOOTSTRAP {
		return "Bootstrap"
	}
	m, err := xds.NewMessage(applyTo)
	if err != nil {
		return applyTo.String()
	}
	return string(m.ProtoReflect().Descriptor().Name())
}

// validateEnvoy runs the message's protoc-gen-validate rules, which
// Envoy enforces when it loads the config.
func validateEnvoy(m proto.Message) error {
	if vm, ok := m.(interface{ ValidateAll() error }); ok {
		return vm.ValidateAll()
	}
	if vm, ok := m.(interface{ Validate() error }); ok {
		return vm.Validate()
	}
	return nil
}

// validateAnys unpacks every Any under m (TypedStruct values as their
// type_url's message) and validates it.
func validateAnys(m protoreflect.Message) error {
	var first error
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		check := func(sub protoreflect.Message) bool {
			if err := validateAny(sub); err != nil {
				first = err
				return false
			}
			return true
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := val.List()
			for i := 0; i < l.Len(); i++ {
				if !check(l.Get(i).Message()) {
					return false
				}
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			var ok = true
			val.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				ok = check(mv.Message())
				return ok
			})
			return ok
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			return check(val.Message())
		}
		return true
	})
	return first
}

func validateAny(m protoreflect.Message) error {
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return validateAnys(m)
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		return fmt.Errorf("typed config %s: %v", a.GetTypeUrl(), err)
	}
	if ts, ok := typedStruct(inner); ok {
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(ts.url)
		if err != nil {
			return nil // reported by unknownTypes
		}
		inner = mt.New().Interface()
		if ts.value != nil {
			if err := xds.StructToMessage(ts.value, inner, true); err != nil {
				return fmt.Errorf("typed config %s: %v", ts.url, err)
			}
		}
	}
	if err := validateEnvoy(inner); err != nil {
		return fmt.Errorf("typed config %s: %v", typeURLOf(inner), err)
	}
	return validateAnys(inner.ProtoReflect())
}

func typeURLOf(m proto.Message) string {
	return "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
}

type typedStructValue struct {
	url   string
	value *structpb.Struct
}

// typedStruct reads a udpa or xds TypedStruct, the form of a typed config
// Envoy converts itself.
func typedStruct(m proto.Message) (typedStructValue, bool) {
	r := m.ProtoReflect()
	name := string(r.Descriptor().FullName())
	if name != "udpa.type.v1.TypedStruct" && name != "xds.type.v3.TypedStruct" {
		return typedStructValue{}, false
	}
	fields := r.Descriptor().Fields()
	out := typedStructValue{url: r.Get(fields.ByName("type_url")).String()}
	if vf := fields.ByName("value"); r.Has(vf) {
		out.value, _ = r.Get(vf).Message().Interface().(*structpb.Struct)
	}
	return out, true
}

type unknownType struct{ field, url string }

// unknownTypes walks a value's JSON for "@type" entries (and a
// TypedStruct's type_url) that no registered message has, naming the
// field of each: `spec.configPatches[0].patch.value.typed_config["@type"]`.
func unknownTypes(f string, fields map[string]*structpb.Value) []unknownType {
	var out []unknownType
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	isTypedStruct := false
	if t, ok := fields["@type"]; ok {
		url := t.GetStringValue()
		if _, err := protoregistry.GlobalTypes.FindMessageByURL(url); err != nil {
			out = append(out, unknownType{key(f, "@type"), url})
		}
		isTypedStruct = url == xds.UDPATypedStructType || url == xds.XDSTypedStructType
	}
	for _, k := range names {
		if k == "@type" {
			continue
		}
		field := f + "." + k
		if !isIdentifier(k) {
			field = key(f, k)
		}
		if isTypedStruct && (k == "type_url" || k == "typeUrl") {
			url := fields[k].GetStringValue()
			if _, err := protoregistry.GlobalTypes.FindMessageByURL(url); err != nil {
				out = append(out, unknownType{field, url})
			}
			continue
		}
		out = append(out, unknownTypesIn(field, fields[k])...)
	}
	return out
}

func unknownTypesIn(f string, val *structpb.Value) []unknownType {
	switch x := val.GetKind().(type) {
	case *structpb.Value_StructValue:
		return unknownTypes(f, x.StructValue.GetFields())
	case *structpb.Value_ListValue:
		var out []unknownType
		for i, e := range x.ListValue.GetValues() {
			out = append(out, unknownTypesIn(at(f, i), e)...)
		}
		return out
	}
	return nil
}

// isIdentifier reports whether k can follow a "." in a field path.
func isIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
