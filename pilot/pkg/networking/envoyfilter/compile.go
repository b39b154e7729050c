package envoyfilter

import (
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// patch is one config patch ready to apply (istiod's
// EnvoyFilterConfigPatchWrapper).
type patch struct {
	ref       PatchRef
	key       config.Key
	applyTo   networking.EnvoyFilter_ApplyTo
	operation networking.EnvoyFilter_Patch_Operation
	match     *networking.EnvoyFilter_EnvoyConfigObjectMatch
	value     proto.Message
	report    *PatchReport
}

// wellKnownVersions are istiod's proxyVersion regexes it reduces to prefix
// matches; kept so that the behaviour is the same for them.
var wellKnownVersions = map[string]string{
	`^1\.16.*`: "1.16", `^1\.17.*`: "1.17", `^1\.18.*`: "1.18", `^1\.19.*`: "1.19",
	`^1\.20.*`: "1.20", `^1\.21.*`: "1.21", `^1\.22.*`: "1.22", `^1\.23.*`: "1.23",
}

func field(i int, rest string) string { return fmt.Sprintf("spec.configPatches[%d]%s", i, rest) }

// compile turns the filters' patches into patches that apply to this
// proxy, filling one report per patch, as istiod's
// convertToEnvoyFilterWrapper and proxyMatch do.
func compile(filters []Filter, proxy Proxy, values *Values, reports *[]PatchReport) ([]*patch, []*config.Error) {
	var out []*patch
	var errs []*config.Error
	type slot struct {
		p     *patch
		index int
	}
	var slots []slot
	for _, f := range filters {
		key := config.Key{Kind: schema.EnvoyFilter, Namespace: f.Namespace, Name: f.Name}
		for i, cp := range f.Spec.GetConfigPatches() {
			rep := PatchReport{
				Patch:     PatchRef{Namespace: f.Namespace, Name: f.Name, Index: i},
				ApplyTo:   cp.GetApplyTo(),
				Operation: cp.GetPatch().GetOperation(),
			}
			p, skip, err := compileOne(key, i, cp, proxy, values)
			if err != nil {
				errs = append(errs, err)
			}
			rep.Skipped = skip
			*reports = append(*reports, rep)
			if p != nil {
				p.ref = rep.Patch
				slots = append(slots, slot{p, len(*reports) - 1})
			}
		}
	}
	// Reports are final now; point patches at them.
	for _, s := range slots {
		s.p.report = &(*reports)[s.index]
		out = append(out, s.p)
	}
	return out, errs
}

func compileOne(key config.Key, i int, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch, proxy Proxy, values *Values) (*patch, string, *config.Error) {
	bad := func(f, msg string) (*patch, string, *config.Error) {
		return nil, "invalid: " + msg, &config.Error{Key: key, Field: field(i, f), Message: msg}
	}
	if cp.GetPatch() == nil {
		return bad("", "patch is missing")
	}
	ctx := cp.GetMatch().GetContext()
	if ctx != networking.EnvoyFilter_ANY && ctx != networking.EnvoyFilter_GATEWAY {
		// A filter shared with sidecars: not an error, and not "matched
		// nothing" either.
		return nil, "context " + ctx.String() + " never applies to a gateway", nil
	}
	switch cp.GetApplyTo() {
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN, networking.EnvoyFilter_NETWORK_FILTER,
		networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_VIRTUAL_HOST,
		networking.EnvoyFilter_HTTP_ROUTE, networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_LISTENER_FILTER:
	default:
		msg := "applyTo " + cp.GetApplyTo().String() + " is not applied by Wayfinder"
		return nil, msg, &config.Error{Key: key, Field: field(i, ".applyTo"), Message: msg, Warning: true}
	}
	op := cp.GetPatch().GetOperation()
	if op == networking.EnvoyFilter_Patch_INVALID {
		return bad(".patch.operation", "operation is missing")
	}
	if op != networking.EnvoyFilter_Patch_REMOVE && cp.GetPatch().GetValue() == nil {
		return bad(".patch.value", op.String()+" needs a value")
	}
	built := values.build(cp)
	if built.err != nil {
		return bad(".patch.value", built.err.Error())
	}
	value := built.value
	var warn *config.Error
	if built.loose != nil {
		// istiod drops unknown fields without a word; say so, since a
		// misspelt field is the usual reason a patch "does nothing".
		warn = &config.Error{Key: key, Field: field(i, ".patch.value"), Warning: true, Message: built.loose.Error()}
	}
	p := &patch{key: key, applyTo: cp.GetApplyTo(), operation: op, match: cp.GetMatch(), value: value}
	if p.match == nil {
		p.match = &networking.EnvoyFilter_EnvoyConfigObjectMatch{Context: networking.EnvoyFilter_ANY}
	}
	if pm := p.match.GetProxy(); pm != nil {
		ok, err := proxyMatches(pm, proxy)
		if err != nil {
			return bad(".match.proxy.proxyVersion", err.Error())
		}
		if !ok {
			return nil, "proxy does not match match.proxy", warn
		}
	}
	// istiod: inserts are positional only among filters and routes; for
	// the rest they are ADD.
	switch op {
	case networking.EnvoyFilter_Patch_INSERT_AFTER, networking.EnvoyFilter_Patch_INSERT_BEFORE, networking.EnvoyFilter_Patch_INSERT_FIRST:
		switch p.applyTo {
		case networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_NETWORK_FILTER,
			networking.EnvoyFilter_HTTP_ROUTE, networking.EnvoyFilter_LISTENER_FILTER:
		default:
			p.operation = networking.EnvoyFilter_Patch_ADD
		}
	}
	return p, "", warn
}

// proxyMatches is istiod's proxyMatch.
func proxyMatches(pm *networking.EnvoyFilter_ProxyMatch, proxy Proxy) (bool, error) {
	if v := pm.GetProxyVersion(); v != "" {
		if prefix, ok := wellKnownVersions[v]; ok {
			if !strings.HasPrefix(proxy.Version, prefix) {
				return false, nil
			}
		} else {
			re, err := regexp.Compile(v)
			if err != nil {
				return false, fmt.Errorf("proxyVersion %q: %v", v, err)
			}
			if proxy.Version == "" || !re.MatchString(proxy.Version) {
				return false, nil
			}
		}
	}
	for k, v := range pm.GetMetadata() {
		if proxy.Metadata[k] != v {
			return false, nil
		}
	}
	return true, nil
}
