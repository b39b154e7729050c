// Package addons_test checks the Grafana dashboard (grafana/wayfinder.json)
// and the Prometheus alert rules (prometheus/wayfinder-alerts.yaml): they
// are well formed, and every metric they query is one that a running
// pilot-discovery exports on /metrics, so they cannot drift from the code.
package addons_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// config serves one gateway and holds one error, so that every labelled
// metric has a series.
const config = objects.PublicGatewayYAML + `---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: shop.example.com, port: {number: 80}}, weight: -1}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: default}
spec:
  hosts: [web.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: web.example.com, port: {number: 80}}}]
`

// exported runs pilot-discovery in-process, connects a gateway that NACKs
// routes, and returns the metric names its /metrics shows (histograms as
// NAME_bucket, NAME_sum and NAME_count, as queries use them).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), config)
	s := serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir})
	gw := serverenv.Gateway(t, s.GRPCAddr().String(), "gw-0", map[string]string{"istio": "ingressgateway"},
		func(typeURL string, _ []*anypb.Any) error {
			if typeURL == adsc.RouteType {
				return errors.New("refused for the test")
			}
			return nil
		})
	serverenv.WaitFor(t, gw, "a route NACK", serverenv.WaitTimeout, func(st adsc.State) bool { return st.Types[adsc.RouteType].NACKs > 0 })

	var names map[string]bool
	// The server counts the NACK a moment after the client sends it.
	poll.Until(t, "the NACK to show in pilot_total_xds_rejects", func() bool {
		resp, err := http.Get("http://" + s.HTTPAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		names = map[string]bool{}
		for line := range strings.SplitSeq(string(body), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
		return names["pilot_total_xds_rejects"]
	}, poll.Timeout(serverenv.WaitTimeout), poll.Interval(10*time.Millisecond))
	return names
}

// metricName finds the names of our metrics in a PromQL expression.
var metricName = regexp.MustCompile(`\b((?:pilot|wayfinder|process|go)_[a-z0-9_]+)\b`)

// envoyMetric finds the gateways' Envoy metrics in a PromQL expression:
// the server does not export these, so they are checked against
// routeMetrics instead.
var envoyMetric = regexp.MustCompile(`\b(envoy_[a-z0-9_]+)\b`)

// routeMetrics are the Prometheus names of Envoy's per-route statistics
// (vhost.<virtual host>.route.<stat_prefix>.upstream_rq_total,
// .upstream_rq_<code class>, .upstream_rq_time) once the tags of
// pkg/envoystats, which Wayfinder's gateway bootstraps carry, take the
// virtual host and stat prefix out of the name into labels; the code
// class is Envoy's default envoy_response_code_class tag.
var routeMetrics = []string{"envoy_vhost_route_upstream_rq_total", "envoy_vhost_route_upstream_rq", "envoy_vhost_route_upstream_rq_time_bucket"}

func envoyMetricsIn(expr string) []string {
	var out []string
	for _, m := range envoyMetric.FindAllStringSubmatchIndex(expr, -1) {
		// A label (envoy_response_code=~"5..") is not a metric.
		if rest := strings.TrimLeft(expr[m[3]:], " "); strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "!") {
			continue
		}
		out = append(out, expr[m[2]:m[3]])
	}
	return out
}

func metricsIn(expr string) []string {
	var out []string
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana/wayfinder.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana/wayfinder.json: %v", err)
	}
	return d
}

func readRules(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile("prometheus/wayfinder-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	// Strict: a misspelt field (expresion:) would silently do nothing.
	if err := yaml.UnmarshalStrict(b, &pr); err != nil {
		t.Fatalf("prometheus/wayfinder-alerts.yaml: %v", err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("alerts are %s %s, want a monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	var rules []rule
	for _, g := range pr.Spec.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// The dashboard and the rules are well formed: panels have unique ids and
// queries, rules have a name, an expression, a severity and a summary.
func TestWellFormed(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q", d.UID, d.Title)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || len(metricsIn(tg.Expr))+len(envoyMetricsIn(tg.Expr)) == 0 {
				t.Errorf("panel %q query %s: %q queries none of our metrics", p.Title, tg.RefID, tg.Expr)
			}
			for _, m := range envoyMetricsIn(tg.Expr) {
				if !slices.Contains(routeMetrics, m) {
					t.Errorf("panel %q query %s: Envoy metric %s is not one of the per-route statistics %v", p.Title, tg.RefID, m, routeMetrics)
				}
			}
		}
	}
	// What the issue asks a dashboard to show.
	var all strings.Builder
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			all.WriteString(tg.Expr + "\n")
		}
	}
	for _, m := range []string{"pilot_xds{", "pilot_xds_pushes", "wayfinder_push_duration_seconds", "pilot_proxy_convergence_time",
		"pilot_total_xds_rejects", "wayfinder_config_errors", "wayfinder_xds_pending_proxies", "process_resident_memory_bytes"} {
		if !strings.Contains(all.String(), m) {
			t.Errorf("dashboard does not show %s", m)
		}
	}

	rules := readRules(t)
	if len(rules) < 5 {
		t.Fatalf("%d alert rules", len(rules))
	}
	for _, r := range rules {
		if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
			t.Errorf("rule %+v lacks a name, expression, severity or summary", r)
		}
	}
}

// The dashboard shows the gateways' traffic by route: requests (and 5xx)
// and upstream latency from Envoy's per-route statistics, grouped by the
// route label, whose values are the stat prefixes the route translation
// sets (vs/NS/NAME/http/I, httproute/NS/NAME/rule/I).
func TestPerRoutePanel(t *testing.T) {
	want := map[string]bool{
		`sum by (route) (rate(envoy_vhost_route_upstream_rq_total{route!=""}[5m]))`:                                     false,
		`sum by (route) (rate(envoy_vhost_route_upstream_rq{route!="",envoy_response_code_class="5xx"}[5m]))`:           false,
		`histogram_quantile(0.99, sum by (le, route) (rate(envoy_vhost_route_upstream_rq_time_bucket{route!=""}[5m])))`: false,
	}
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			if _, ok := want[tg.Expr]; ok {
				want[tg.Expr] = true
			}
		}
	}
	for expr, found := range want {
		if !found {
			t.Errorf("no panel queries %s", expr)
		}
	}
}

// Every metric a panel or a rule queries is exported by the server.
func TestQueriedMetricsExist(t *testing.T) {
	have := exported(t)
	var queried []string
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			for _, m := range metricsIn(tg.Expr) {
				queried = append(queried, "dashboard panel "+p.Title+": "+m)
			}
		}
	}
	for _, r := range readRules(t) {
		for _, m := range metricsIn(r.Expr) {
			queried = append(queried, "alert "+r.Alert+": "+m)
		}
	}
	slices.Sort(queried)
	for _, q := range slices.Compact(queried) {
		m := q[strings.LastIndex(q, " ")+1:]
		if !have[m] {
			t.Errorf("%s is not in /metrics", q)
		}
	}
	if len(queried) < 20 {
		t.Errorf("only %d metric uses found; is the parser right?", len(queried))
	}
}
