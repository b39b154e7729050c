package featuretest

import (
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// An upper-case header match name is a warning, not an error: the
// VirtualService is served with the name lower-cased, and the warning is in
// /debug/configz. A regex Envoy would refuse costs its own route only: the
// error names the object and field, and the object's other routes, and
// every other route of the table, are still pushed and ACKed.
func TestHeaderCaseWarnsAndOversizeRegexCostsOneRoute(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	waitFor(t, c, "initial", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	e.write("parity.yaml", `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.example.com]
  gateways: [istio-system/public]
  http:
  - name: too-big
    match: [{uri: {regex: "^/[^/]{1,45}/?$"}}]
    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v1}}]
  - name: canary
    match: [{uri: {prefix: /canary}, headers: {X-Canary: {exact: "yes"}}}]
    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v2}}]
  - name: rest
    match: [{uri: {prefix: /}}]
    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v1}}]
`)
	s := waitFor(t, c, "shop routes ACKed", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "shop.example.com:80", "/canary")
	})
	var names, headers []string
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() != "shop.example.com:80" {
			continue
		}
		for _, r := range vh.GetRoutes() {
			names = append(names, r.GetName())
			for _, h := range r.GetMatch().GetHeaders() {
				headers = append(headers, h.GetName())
			}
		}
	}
	if !slices.Equal(names, []string{"canary", "rest"}) {
		t.Errorf("shop routes %v, want canary and rest (too-big left out)", names)
	}
	if !slices.Equal(headers, []string{"x-canary"}) {
		t.Errorf("header matchers %v, want [x-canary]", headers)
	}
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Error("unrelated routes lost")
	}

	errs := e.configz().Errors
	find := func(field string, warning bool, msg string) bool {
		return slices.ContainsFunc(errs, func(ce debugapi.ConfigzError) bool {
			return ce.Origin == "translation" && ce.Name == "shop" && ce.Field == field && ce.Warning == warning &&
				strings.Contains(ce.Message, msg)
		})
	}
	if !find("spec.http[1].match[0].headers[X-Canary]", true, "matched without case") {
		t.Errorf("no warning for the upper-case header name: %+v", errs)
	}
	if !find("spec.http[0].match[0].uri.regex", false, "over Envoy's limit of 100") {
		t.Errorf("no error for the oversize regex: %+v", errs)
	}
}
