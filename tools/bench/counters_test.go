package main

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParsePolicyCases(t *testing.T) {
	got, err := parseCases("1000x500,1_000x500+ap500+ra100,10x2+ra3,10x2+ap1")
	if err != nil {
		t.Fatal(err)
	}
	want := []benchCase{
		{Services: 1000, Gateways: 500},
		{Services: 1000, Gateways: 500, AuthorizationPolicies: 500, RequestAuthentications: 100},
		{Services: 10, Gateways: 2, RequestAuthentications: 3},
		{Services: 10, Gateways: 2, AuthorizationPolicies: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// String round-trips, and names the work folder and the dumps.
	for _, c := range want {
		back, err := parseCases(c.String())
		if err != nil || len(back) != 1 || back[0] != c {
			t.Errorf("%s: %v %v", c, back, err)
		}
	}
	if s := want[1].String(); s != "1000x500+ap500+ra100" {
		t.Errorf("String = %q", s)
	}
	if l := want[1].label(); l != "1000 x 500 + 500 AP, 100 RA" {
		t.Errorf("label = %q", l)
	}
	for _, bad := range []string{"10x2+", "10x2+ap", "10x2+ap0", "10x2+apx", "10x2+zz5", "10x2+ap1+ap2", "10x2++ra1"} {
		if _, err := parseCases(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// The plain matrix keeps its targets; a policy case is not held to them.
	if _, ok := targets[want[0]]; !ok {
		t.Error("1000x500 lost its targets")
	}
	if _, ok := targets[want[1]]; ok {
		t.Error("a policy case has the plain case's targets")
	}
}

func TestKubeModeRefusesPolicyCases(t *testing.T) {
	k := kubeFlags{cases: "1000x500+ap5", churnRates: "50"}
	if _, err := k.parse(); err == nil || !strings.Contains(err.Error(), "file mode only") {
		t.Fatalf("got %v", err)
	}
}

const metricsPage = `# HELP wayfinder_translations_total Translator runs
# TYPE wayfinder_translations_total counter
wayfinder_translations_total{what="gateway"} 2
wayfinder_translations_total{what="gateway-warm"} 1
wayfinder_translations_total{what="services"} 1
wayfinder_push_duration_seconds_bucket{le="0.005"} 0
wayfinder_push_duration_seconds_sum 0.25
wayfinder_push_duration_seconds_count 2
go_memstats_heap_inuse_bytes 4.194304e+07
`

func TestCountersByPhase(t *testing.T) {
	m, err := parseMetrics(bufio.NewScanner(strings.NewReader(metricsPage)))
	if err != nil {
		t.Fatal(err)
	}
	end := countersAt(m)
	if end.Translations["gateway"] != 2 || end.Translations["services"] != 1 || end.Pushes != 2 || end.PushSeconds != 0.25 || end.HeapInuseBytes != 40<<20 {
		t.Fatalf("counters %+v", end)
	}
	ready := counters{Translations: map[string]float64{"services": 1, "gateway-warm": 1}, Pushes: 1, PushSeconds: 0.2, HeapInuseBytes: 10 << 20}
	d := end.since(ready)
	// Only what grew is listed; the heap is the later mark's.
	if len(d.Translations) != 1 || d.Translations["gateway"] != 2 || d.Pushes != 1 || d.HeapInuseBytes != 40<<20 {
		t.Fatalf("since %+v", d)
	}
	if got := translationsCell(d); got != "gateway 2; 1 pushes, 50 ms" {
		t.Errorf("cell %q", got)
	}
	if got := translationsCell(&counters{}); got != "none; 0 pushes, 0 ms" {
		t.Errorf("empty cell %q", got)
	}
}

// TestCountersScrapedAtTheMarks serves a /metrics page that changes
// between the marks, as the server's does.
func TestCountersScrapedAtTheMarks(t *testing.T) {
	pages := []string{
		"wayfinder_translations_total{what=\"services\"} 1\nwayfinder_push_duration_seconds_count 1\ngo_memstats_heap_inuse_bytes 1048576\n",
		"wayfinder_translations_total{what=\"services\"} 1\nwayfinder_translations_total{what=\"gateway\"} 1\nwayfinder_push_duration_seconds_count 1\ngo_memstats_heap_inuse_bytes 2097152\n",
		"wayfinder_translations_total{what=\"services\"} 1\nwayfinder_translations_total{what=\"gateway\"} 2\nwayfinder_push_duration_seconds_count 2\ngo_memstats_heap_inuse_bytes 3145728\n",
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(pages[min(n, len(pages)-1)]))
		n++
	}))
	defer srv.Close()
	m := &counterMarks{url: srv.URL}
	ctx := context.Background()
	m.mark(ctx, &m.ready, &m.okReady)
	m.mark(ctx, &m.cold, &m.okCold)
	m.mark(ctx, &m.end, &m.okEnd)
	c := m.result()
	if c == nil || c.Ready.Translations["services"] != 1 || c.Cold.Translations["gateway"] != 1 || len(c.Cold.Translations) != 1 ||
		c.Update.Translations["gateway"] != 1 || c.Update.Pushes != 1 || c.Update.HeapInuseBytes != 3<<20 {
		t.Fatalf("got %+v %+v %+v", c.Ready, c.Cold, c.Update)
	}
	// No server, no counters.
	dead := &counterMarks{url: "http://127.0.0.1:1/metrics"}
	dead.mark(ctx, &dead.ready, &dead.okReady)
	if dead.result() != nil {
		t.Error("counters from a failed scrape")
	}

	// Repeated runs: the most translations any run made stands.
	r1, r2 := result{Counters: c}, result{Counters: &serverCounters{Ready: c.Ready, Cold: c.Cold,
		Update: &counters{Translations: map[string]float64{"gateway": 3}, Pushes: 1, HeapInuseBytes: 1 << 20}}}
	med := medianCounters([]result{r1, r2, {}})
	if med.Update.Translations["gateway"] != 3 || med.Update.HeapInuseBytes != 2<<20 {
		t.Errorf("median %+v", med.Update)
	}
	md := countersSection([]result{{Case: benchCase{Services: 10, Gateways: 2, AuthorizationPolicies: 5}, Server: "pilot", Counters: c}})
	for _, want := range []string{"## Translations and pushes", "| 10 x 2 + 5 AP, 0 RA | pilot | services 1; 1 pushes, 0 ms | gateway 1; 0 pushes, 0 ms | gateway 1; 1 pushes, 0 ms | 1 / 2 / 3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if countersSection([]result{{Server: "floor"}}) != "" {
		t.Error("section without counters")
	}
}
