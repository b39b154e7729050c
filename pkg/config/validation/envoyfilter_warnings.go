package validation

import (
	"fmt"
	"strings"

	udpaannotations "github.com/cncf/xds/go/udpa/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/xds"
)

// deprecatedFilterNames maps the filter names istiod 1.29 still accepts in
// a match to their canonical names (istiod's pkg/config/xds
// DeprecatedFilterNames, reversed).
var deprecatedFilterNames = map[string]string{
	"envoy.buffer":                  "envoy.filters.http.buffer",
	"envoy.cors":                    "envoy.filters.http.cors",
	"envoy.csrf":                    "envoy.filters.http.csrf",
	"envoy.http_dynamo_filter":      "envoy.filters.http.dynamo",
	"envoy.fault":                   "envoy.filters.http.fault",
	"envoy.grpc_http1_bridge":       "envoy.filters.http.grpc_http1_bridge",
	"envoy.grpc_json_transcoder":    "envoy.filters.http.grpc_json_transcoder",
	"envoy.grpc_web":                "envoy.filters.http.grpc_web",
	"envoy.gzip":                    "envoy.filters.http.gzip",
	"envoy.health_check":            "envoy.filters.http.health_check",
	"envoy.ip_tagging":              "envoy.filters.http.ip_tagging",
	"envoy.lua":                     "envoy.filters.http.lua",
	"envoy.rate_limit":              "envoy.filters.http.ratelimit",
	"envoy.router":                  "envoy.filters.http.router",
	"envoy.squash":                  "envoy.filters.http.squash",
	"envoy.listener.http_inspector": "envoy.filters.listener.http_inspector",
	"envoy.listener.original_dst":   "envoy.filters.listener.original_dst",
	"envoy.listener.original_src":   "envoy.filters.listener.original_src",
	"envoy.listener.proxy_protocol": "envoy.filters.listener.proxy_protocol",
	"envoy.listener.tls_inspector":  "envoy.filters.listener.tls_inspector",
	"envoy.client_ssl_auth":         "envoy.filters.network.client_ssl_auth",
	"envoy.ext_authz":               "envoy.filters.http.ext_authz (or envoy.filters.network.ext_authz)",
	"envoy.http_connection_manager": "envoy.filters.network.http_connection_manager",
	"envoy.mongo_proxy":             "envoy.filters.network.mongo_proxy",
	"envoy.ratelimit":               "envoy.filters.network.ratelimit",
	"envoy.redis_proxy":             "envoy.filters.network.redis_proxy",
	"envoy.tcp_proxy":               "envoy.filters.network.tcp_proxy",
}

// EnvoyFilterWarnings are istiod 1.29's warnings about an EnvoyFilter
// (ValidateEnvoyFilter's WrapWarning cases): they do not reject the object,
// but say what will not work as its author probably meant. Each names the
// field: a workloadSelector without labels (it selects every gateway of
// the namespace), a filter match with applyTo LISTENER or FILTER_CHAIN
// (it has no effect), a deprecated filter name in a match, and in a value
// type URLs of frozen (deprecated) Envoy packages and filters named
// without a typed_config. The spec must have passed Validate; for others
// the result is incomplete. Patches of context WAYPOINT are skipped.
func EnvoyFilterWarnings(ef *networking.EnvoyFilter) []*config.FieldError {
	var out []*config.FieldError
	add := func(field, format string, args ...any) {
		out = append(out, config.FieldErrorf(field, format, args...))
	}
	if sel := ef.GetWorkloadSelector(); sel != nil && len(sel.GetLabels()) == 0 {
		add("spec.workloadSelector", "workload selector without labels: the EnvoyFilter applies to every gateway of its namespace")
	}
	for i, cp := range ef.GetConfigPatches() {
		f := at("spec.configPatches", i)
		if cp == nil || cp.GetMatch().GetContext() == networking.EnvoyFilter_WAYPOINT {
			continue
		}
		fm := cp.GetMatch().GetListener().GetFilterChain().GetFilter()
		ff := f + ".match.listener.filterChain.filter"
		if fm != nil && (cp.GetApplyTo() == networking.EnvoyFilter_LISTENER || cp.GetApplyTo() == networking.EnvoyFilter_FILTER_CHAIN) {
			add(ff, "a filter match has no effect with applyTo %v", cp.GetApplyTo())
		}
		if canon, ok := deprecatedFilterNames[fm.GetName()]; ok {
			add(ff+".name", "deprecated filter name %q; use %q", fm.GetName(), canon)
		}
		if canon, ok := deprecatedFilterNames[fm.GetSubFilter().GetName()]; ok {
			add(ff+".subFilter.name", "deprecated filter name %q; use %q", fm.GetSubFilter().GetName(), canon)
		}
		value := cp.GetPatch().GetValue()
		if value == nil || cp.GetApplyTo() == networking.EnvoyFilter_BOOTSTRAP {
			continue
		}
		obj, err := xds.BuildXDSObjectFromStruct(cp.GetApplyTo(), value, false)
		if err != nil || obj == nil {
			continue // an error of Validate's
		}
		if frozen := frozenTypes(obj.ProtoReflect()); len(frozen) > 0 {
			add(f+".patch.value", "deprecated type URL(s): %s", strings.Join(frozen, ", "))
		}
		if missing := missingTypedConfig(obj.ProtoReflect()); len(missing) > 0 {
			add(f+".patch.value", "filter(s) named without typed_config, a form Envoy is removing: %s", strings.Join(missing, ", "))
		}
	}
	return out
}

// frozenTypes lists the type URLs of Anys under m whose proto package
// Envoy marks FROZEN (istiod's recurseDeprecatedTypes).
func frozenTypes(m protoreflect.Message) []string {
	var out []string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		each := func(sub protoreflect.Message) {
			if a, ok := sub.Interface().(*anypb.Any); ok {
				if mt, err := protoregistry.GlobalTypes.FindMessageByURL(a.GetTypeUrl()); err == nil && isFrozen(mt.Descriptor()) {
					out = append(out, a.GetTypeUrl())
				}
			}
			out = append(out, frozenTypes(sub)...)
		}
		forMessages(fd, v, each)
		return true
	})
	return out
}

func isFrozen(d protoreflect.MessageDescriptor) bool {
	opts, ok := d.ParentFile().Options().(*descriptorpb.FileOptions)
	if !ok || opts == nil || !proto.HasExtension(opts, udpaannotations.E_FileStatus) {
		return false
	}
	st, ok := proto.GetExtension(opts, udpaannotations.E_FileStatus).(*udpaannotations.StatusAnnotation)
	return ok && st.GetPackageVersionStatus() == udpaannotations.PackageVersionStatus_FROZEN
}

// missingTypedConfig lists the names of messages under m that have a
// typed_config field but set neither it nor config_discovery (istiod's
// recurseMissingTypedConfig).
func missingTypedConfig(m protoreflect.Message) []string {
	var out []string
	fields := m.Descriptor().Fields()
	requires, has := false, false
	name := ""
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch fd.JSONName() {
		case "name":
			name = fmt.Sprint(m.Get(fd).Interface())
		case "typedConfig":
			requires = true
			has = has || m.Has(fd)
		case "configDiscovery":
			has = has || m.Has(fd)
		}
		if m.Has(fd) && fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			out = append(out, missingTypedConfig(m.Get(fd).Message())...)
		}
	}
	if requires && !has {
		out = append(out, name)
	}
	return out
}

// forMessages calls each for every message value of field fd.
func forMessages(fd protoreflect.FieldDescriptor, v protoreflect.Value, each func(protoreflect.Message)) {
	switch {
	case fd.IsList() && fd.Message() != nil:
		l := v.List()
		for i := 0; i < l.Len(); i++ {
			each(l.Get(i).Message())
		}
	case fd.IsMap() && fd.MapValue().Message() != nil:
		v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
			each(mv.Message())
			return true
		})
	case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
		each(v.Message())
	}
}
