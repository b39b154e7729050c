package validation

import (
	"math"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
)

// maxRegexLen bounds a regex's length. Envoy limits the RE2 program size,
// which Go cannot measure; the length is a conservative stand-in, the same
// bound Istio uses.
const maxRegexLen = 1024

// checkDuration reports a malformed duration, one below minimum, or one
// that is not a whole number of milliseconds (Envoy's timers tick in ms and
// Istio rounds nothing for you).
func (v *validator) checkDuration(field string, d *durationpb.Duration, minimum time.Duration) {
	if d == nil {
		return
	}
	if err := d.CheckValid(); err != nil {
		v.add(field, "invalid duration: %v", err)
		return
	}
	dur := d.AsDuration()
	switch {
	case dur < minimum && minimum == 0:
		v.add(field, "duration %v must not be negative", dur)
	case dur < minimum:
		v.add(field, "duration %v must be at least %v", dur, minimum)
	case dur%time.Millisecond != 0:
		v.add(field, "duration %v must be a whole number of milliseconds", dur)
	}
}

// checkPercent reports a percentage outside 0-100 (NaN and infinities
// included: protojson accepts "NaN" for a double).
func (v *validator) checkPercent(field string, p float64) {
	if math.IsNaN(p) || p < 0 || p > 100 {
		v.add(field, "percentage %v must be in the range 0-100", p)
	}
}

// checkRegex reports a regex that is empty, too long, or not RE2 syntax.
// Go's regexp implements RE2, the engine Envoy uses.
func (v *validator) checkRegex(field, re string) {
	switch {
	case re == "":
		v.add(field, "regex must not be empty")
	case len(re) > maxRegexLen:
		v.add(field, "regex is %d characters long; at most %d are allowed", len(re), maxRegexLen)
	default:
		if _, err := regexp.Compile(re); err != nil {
			v.add(field, "invalid RE2 regex: %v", err)
		}
	}
}

// stringMatch checks a StringMatch at field. An empty match ({}) is
// allowed: for headers it means "present".
func (v *validator) stringMatch(field string, sm *networking.StringMatch) {
	if r, ok := sm.GetMatchType().(*networking.StringMatch_Regex); ok {
		v.checkRegex(field+".regex", r.Regex)
	}
}

// headerOperations checks the set/add/remove lists of a route's or a
// destination's headers.
func (v *validator) headerOperations(field string, h *networking.Headers) {
	if h == nil {
		return
	}
	if r := h.Request; r != nil {
		v.headerWrites(field+".request.set", r.Set, true)
		v.headerWrites(field+".request.add", r.Add, true)
		for i, name := range r.Remove {
			v.headerName(at(field+".request.remove", i), name, false)
		}
	}
	if r := h.Response; r != nil {
		v.headerWrites(field+".response.set", r.Set, false)
		v.headerWrites(field+".response.add", r.Add, false)
		for i, name := range r.Remove {
			v.headerName(at(field+".response.remove", i), name, false)
		}
	}
}

func (v *validator) headerWrites(field string, m map[string]string, request bool) {
	for _, name := range sortedKeys(m) {
		f := key(field, name)
		v.headerName(f, name, request)
		if err := validateHeaderValue(m[name]); err != nil {
			v.addErr(f, err)
		}
	}
}

// headerName checks a header a route writes or removes. Only the request
// authority may be rewritten through headers (":authority" or "host");
// Envoy refuses to touch other pseudo-headers and the response has none.
func (v *validator) headerName(field, name string, setRequest bool) {
	switch {
	case name == "":
		v.add(field, "header name must not be empty")
	case isAuthorityHeader(name):
		if !setRequest {
			v.add(field, "header %q cannot be removed or set on a response", name)
		}
	case strings.HasPrefix(name, ":"):
		v.add(field, "pseudo-header %q cannot be modified", name)
	case !isToken(name):
		v.add(field, "%q is not a valid header name", name)
	}
}

func isAuthorityHeader(name string) bool {
	return strings.EqualFold(name, ":authority") || strings.EqualFold(name, "host")
}

// gatewayNames checks references to Gateways: "mesh", "namespace/name", or
// a bare or legacy dotted name ("name.namespace.svc.cluster.local").
func (v *validator) gatewayNames(field string, names []string) {
	for i, name := range names {
		f := at(field, i)
		if name == "mesh" {
			continue
		}
		ns, gw, ok := strings.Cut(name, "/")
		if !ok {
			if err := validateFQDN(name); err != nil {
				v.add(f, "gateway %q: want namespace/name: %v", name, err)
			}
			continue
		}
		if !isDNS1123Label(ns) {
			v.add(f, "gateway %q: namespace %q is not a DNS-1123 label", name, ns)
		}
		if !isDNS1123Label(gw) {
			v.add(f, "gateway %q: name %q is not a DNS-1123 label", name, gw)
		}
	}
}

// exportTo checks visibility: "*" (everyone), "." (this namespace), "~"
// (no one; ServiceEntry only) or namespace names, without duplicates and
// without mixing "*" or "~" with anything else.
func (v *validator) exportTo(field string, list []string, allowNone bool) {
	seen := map[string]bool{}
	for i, e := range list {
		f := at(field, i)
		k := e
		switch {
		case e == "*":
		case e == ".":
			k = v.namespace
		case e == "~":
			if !allowNone {
				v.add(f, `"~" (export to no one) is only allowed on a ServiceEntry`)
				continue
			}
		case !isDNS1123Label(e):
			v.add(f, "%q is not *, ., or a namespace name", e)
			continue
		}
		if seen[k] {
			v.add(f, "duplicate exportTo entry %q", e)
		}
		seen[k] = true
	}
	if len(list) > 1 && (seen["*"] || seen["~"]) {
		v.add(field, `"*" and "~" cannot be combined with other exportTo entries`)
	}
}

// selectorLabels checks a workload selector's labels: valid, non-empty
// keys and no wildcards (Istio selects by exact labels only).
func (v *validator) selectorLabels(field string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		if strings.Contains(k, "*") || strings.Contains(m[k], "*") {
			v.add(key(field, k), "wildcards are not supported in selectors")
			continue
		}
		v.label(key(field, k), k, m[k])
	}
}
