package envoystats

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// extraction is one tag extractor as Envoy applies it: on the original
// name, giving a value and a span to cut.
type extraction func(name string) (value string, cut [2]int, ok bool)

// regexExtractor is Envoy's regex tag extractor: the first group is cut,
// the second is the value.
func regexExtractor(re string) extraction {
	r := regexp.MustCompile(re)
	return func(name string) (string, [2]int, bool) {
		m := r.FindStringSubmatchIndex(name)
		if m == nil {
			return "", [2]int{}, false
		}
		return name[m[4]:m[5]], [2]int{m[2], m[3]}, true
	}
}

// tokenExtractor is Envoy's tokenized extractor for "vhost.$.**"
// (token 1) and "vhost.*.route.$.**" (token 3 after "route").
func tokenExtractor(route bool) extraction {
	return func(name string) (string, [2]int, bool) {
		toks := strings.Split(name, ".")
		if toks[0] != "vhost" || len(toks) < 3 {
			return "", [2]int{}, false
		}
		i := 1
		if route {
			if len(toks) < 5 || toks[2] != "route" {
				return "", [2]int{}, false
			}
			i = 3
		}
		start := len(strings.Join(toks[:i], ".")) + 1
		return toks[i], [2]int{start, start + len(toks[i]) + 1}, true
	}
}

// prometheus emulates Envoy's tag producer on name with its default tags
// that touch route statistics and RouteTags (defaults first; of two
// extractors of one tag name the first that matches wins), and its
// Prometheus output: the metric name and labels.
func prometheus(t *testing.T, name string) (string, map[string]string) {
	t.Helper()
	type extractor struct {
		tag string
		fn  extraction
	}
	all := []extractor{
		{"envoy.virtual_host", tokenExtractor(false)},
		{"envoy.route", tokenExtractor(true)},
		{"envoy.response_code", regexExtractor(`_rq(_(\d{3}))$`)},
		{"envoy.response_code_class", regexExtractor(`_rq(_(\dxx))$`)},
	}
	for _, ts := range RouteTags() {
		all = append(all, extractor{ts.GetTagName(), regexExtractor(ts.GetRegex())})
	}
	labels := map[string]string{}
	cut := make([]bool, len(name))
	for _, e := range all {
		if _, done := labels[e.tag]; done {
			continue
		}
		v, span, ok := e.fn(name)
		if !ok {
			continue
		}
		labels[e.tag] = v
		for i := span[0]; i < span[1]; i++ {
			cut[i] = true
		}
	}
	var b strings.Builder
	for i := range name {
		if !cut[i] {
			b.WriteByte(name[i])
		}
	}
	sanitize := func(s string) string {
		return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(s, "_")
	}
	out := map[string]string{}
	for k, v := range labels {
		out[sanitize(k)] = v
	}
	return "envoy_" + sanitize(b.String()), out
}

func TestRouteStatisticsShareOneNameAndCarryTheRoute(t *testing.T) {
	for _, tc := range []struct {
		vhost, stat, metric string
		code, class         string
	}{
		{"shop.example.com:80", "upstream_rq_200", "envoy_vhost_route_upstream_rq", "200", ""},
		{"shop.example.com:80", "upstream_rq_5xx", "envoy_vhost_route_upstream_rq", "", "5xx"},
		{"shop.example.com:80", "upstream_rq_total", "envoy_vhost_route_upstream_rq_total", "", ""},
		{"shop.example.com:80", "upstream_rq_time", "envoy_vhost_route_upstream_rq_time", "", ""},
		// Envoy's own defaults already work here; the tags agree.
		{"*:80", "upstream_rq_200", "envoy_vhost_route_upstream_rq", "200", ""},
		{"blackhole:443", "upstream_rq_completed", "envoy_vhost_route_upstream_rq_completed", "", ""},
		// A ".route." inside a host name is not the route.
		{"api.route.example.com:8080", "upstream_rq_404", "envoy_vhost_route_upstream_rq", "404", ""},
	} {
		for _, prefix := range []string{"vs/default/shop_v1/http/0/check_out", "httproute/edge/shop/rule/2"} {
			name := "vhost." + tc.vhost + ".route." + prefix + "." + tc.stat
			metric, labels := prometheus(t, name)
			if metric != tc.metric {
				t.Errorf("%s: metric %s, want %s", name, metric, tc.metric)
			}
			want := map[string]string{"virtual_host": tc.vhost, "route": prefix}
			if tc.code != "" {
				want["envoy_response_code"] = tc.code
			}
			if tc.class != "" {
				want["envoy_response_code_class"] = tc.class
			}
			// Envoy's defaults: the host's first label; the route only
			// where the host has no dots (and then it agrees).
			if r, ok := labels["envoy_route"]; ok && !strings.Contains(tc.vhost, ".") && r != prefix {
				t.Errorf("%s: envoy_route %q, want %q", name, r, prefix)
			}
			delete(labels, "envoy_virtual_host")
			delete(labels, "envoy_route")
			if !maps.Equal(labels, want) {
				t.Errorf("%s: labels %v, want %v", name, labels, want)
			}
		}
	}
}

// Statistics that are not a route's keep their names: the tags match
// nothing else.
func TestOtherStatisticsUntouched(t *testing.T) {
	for _, name := range []string{
		"vhost.shop.example.com:80.vcluster.other.upstream_rq_200",
		"cluster.outbound|80||route.example.com.upstream_rq_200",
		"http.outbound_0.0.0.0_80.rds.http.80.config_reload",
	} {
		for _, ts := range RouteTags() {
			if regexp.MustCompile(ts.GetRegex()).MatchString(name) {
				t.Errorf("tag %s matches %s", ts.GetTagName(), name)
			}
		}
	}
}

func TestStatsConfigValid(t *testing.T) {
	c := StatsConfig()
	if err := c.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	if !c.GetUseAllDefaultTags().GetValue() {
		t.Error("Envoy's default tags are off")
	}
	names := []string{}
	for _, ts := range c.GetStatsTags() {
		names = append(names, ts.GetTagName())
	}
	if !slices.Equal(names, []string{VirtualHostTag, RouteTag}) {
		t.Errorf("tags %v", names)
	}
}
