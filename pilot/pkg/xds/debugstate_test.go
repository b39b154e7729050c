package xds

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// debugHarness is a synced server with one proxy that has ACKed everything.
func debugHarness(t *testing.T) (*harness, map[string]string) {
	t.Helper()
	store := newTestStore(base()...)
	store.setErrors(&config.Error{Source: "broken.yaml#1", Message: "yaml: line 3: mapping values are not allowed here"})
	h := newHarness(t, store)
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	versions := map[string]string{}
	for typ, resp := range a.syncAll() {
		versions[typ] = resp.GetVersionInfo()
	}
	a.barrier() // every ACK handled; CDS has been sent twice
	return h, versions
}

func getJSON[T any](t *testing.T, h *harness, path string, wantCode int) T {
	t.Helper()
	code, body := h.get(path)
	if code != wantCode {
		t.Fatalf("GET %s = %d %s, want %d", path, code, body, wantCode)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return out
}

func TestDebugConfigz(t *testing.T) {
	h, _ := debugHarness(t)
	cz := getJSON[debugapi.Configz](t, h, "/debug/configz", 200)
	var keys []string
	for _, c := range cz.Configs {
		keys = append(keys, c.Kind+" "+c.Namespace+"/"+c.Name)
	}
	want := []string{"Gateway istio-system/edge", "Gateway istio-system/internal", "Gateway istio-system/public",
		"VirtualService default/reviews", "ServiceEntry default/reviews"}
	if !slices.Equal(keys, want) {
		t.Errorf("configz objects %v, want %v", keys, want)
	}
	vs := cz.Configs[3]
	if vs.Source != "vs/reviews.yaml#0" {
		t.Errorf("VirtualService source = %q", vs.Source)
	}
	var spec struct {
		Hosts    []string `json:"hosts"`
		Gateways []string `json:"gateways"`
	}
	if err := json.Unmarshal(vs.Spec, &spec); err != nil || !slices.Equal(spec.Hosts, []string{"reviews.example.com"}) ||
		!slices.Equal(spec.Gateways, []string{"istio-system/public"}) {
		t.Errorf("VirtualService spec %s (%v): want protojson with hosts and gateways", vs.Spec, err)
	}
	if len(cz.Errors) != 1 || cz.Errors[0].Origin != "source" || cz.Errors[0].Source != "broken.yaml#1" ||
		!strings.Contains(cz.Errors[0].Message, "mapping values") {
		t.Errorf("configz errors = %+v, want the source's one error", cz.Errors)
	}
	_, b1 := h.get("/debug/configz")
	_, b2 := h.get("/debug/configz")
	if !bytes.Equal(b1, b2) {
		t.Error("configz output differs between two reads of the same state")
	}
}

func TestDebugConfigDump(t *testing.T) {
	h, versions := debugHarness(t)
	if e := getJSON[debugapi.Error](t, h, "/debug/config_dump", 400); !strings.Contains(e.Error, "proxyID") {
		t.Errorf("without proxyID: %q", e.Error)
	}
	if e := getJSON[debugapi.Error](t, h, "/debug/config_dump?proxyID=nobody", 404); !strings.Contains(e.Error, `"nobody"`) {
		t.Errorf("unknown proxy: %q", e.Error)
	}
	code, body := h.get("/debug/config_dump?proxyID=" + nodeID("a"))
	if code != 200 {
		t.Fatalf("config_dump = %d %s", code, body)
	}
	var dump admin.ConfigDump
	if err := protojson.Unmarshal(body, &dump); err != nil {
		t.Fatalf("config_dump is not an admin.v3.ConfigDump: %v", err)
	}
	if len(dump.GetConfigs()) != 4 {
		t.Fatalf("config_dump has %d sections, want clusters, endpoints, listeners, routes", len(dump.GetConfigs()))
	}
	var cds admin.ClustersConfigDump
	var eds admin.EndpointsConfigDump
	var lds admin.ListenersConfigDump
	var rds admin.RoutesConfigDump
	for i, m := range []proto.Message{&cds, &eds, &lds, &rds} {
		if err := dump.GetConfigs()[i].UnmarshalTo(m); err != nil {
			t.Fatalf("section %d: %v", i, err)
		}
	}
	if len(cds.GetDynamicActiveClusters()) != 1 || cds.GetVersionInfo() != versions[resource.ClusterType] {
		t.Errorf("clusters dump = %v, want one cluster at version %s", &cds, versions[resource.ClusterType])
	} else {
		var c cluster.Cluster
		if err := cds.GetDynamicActiveClusters()[0].GetCluster().UnmarshalTo(&c); err != nil || c.GetName() != "outbound|9080||reviews.default.svc.cluster.local" {
			t.Errorf("dumped cluster %q (%v)", c.GetName(), err)
		}
	}
	if len(eds.GetDynamicEndpointConfigs()) != 1 || eds.GetDynamicEndpointConfigs()[0].GetVersionInfo() != versions[resource.EndpointType] {
		t.Errorf("endpoints dump = %v", &eds)
	}
	if len(lds.GetDynamicListeners()) != 1 || lds.GetDynamicListeners()[0].GetName() != "0.0.0.0_80" ||
		lds.GetDynamicListeners()[0].GetActiveState().GetVersionInfo() != versions[resource.ListenerType] {
		t.Errorf("listeners dump = %v", &lds)
	} else {
		var l listener.Listener
		if err := lds.GetDynamicListeners()[0].GetActiveState().GetListener().UnmarshalTo(&l); err != nil || l.GetName() != "0.0.0.0_80" {
			t.Errorf("dumped listener %q (%v)", l.GetName(), err)
		}
	}
	if len(rds.GetDynamicRouteConfigs()) != 1 || rds.GetDynamicRouteConfigs()[0].GetVersionInfo() != versions[resource.RouteType] {
		t.Errorf("routes dump = %v", &rds)
	}
}

func TestDebugSyncz(t *testing.T) {
	h, versions := debugHarness(t)
	sz := getJSON[debugapi.Syncz](t, h, "/debug/syncz", 200)
	if len(sz.Proxies) != 1 || sz.Proxies[0].ID != nodeID("a") {
		t.Fatalf("syncz proxies = %+v", sz.Proxies)
	}
	p := sz.Proxies[0]
	// The key ends with the hash of the proxy's telemetry (groups.go).
	if !strings.HasPrefix(p.GatewayGroup, model.GatewayGroupKey([]config.Config{base()[0]})+"/telemetry/") {
		t.Errorf("gateway group = %q", p.GatewayGroup)
	}
	var types []string
	wantSends := map[string]int{"cds": 2, "eds": 1, "lds": 1, "rds": 1}
	for _, st := range p.Types {
		types = append(types, st.Type)
		want := versions[st.TypeURL]
		if st.Status != "SYNCED" || st.SentVersion != want || st.AckedVersion != want || st.SnapshotVersion != want ||
			st.SentNonce == "" || st.Sends != wantSends[st.Type] || st.Stale || st.LastNack != nil || !st.AckedAt.Equal(t0) {
			t.Errorf("syncz %s = %+v, want SYNCED at %s", st.Type, st, want)
		}
	}
	if !slices.Equal(types, []string{"cds", "eds", "lds", "rds"}) {
		t.Errorf("syncz types %v, want ADS order", types)
	}
}

func TestDebugAdsz(t *testing.T) {
	h, _ := debugHarness(t)
	az := getJSON[debugapi.Adsz](t, h, "/debug/adsz", 200)
	if az.TotalProxies != 1 || len(az.Proxies) != 1 {
		t.Fatalf("adsz = %+v", az)
	}
	p := az.Proxies[0]
	if p.ID != nodeID("a") || p.Type != "router" || p.IP != "10.0.0.1" || p.Pod != "a" || p.Namespace != "istio-system" ||
		p.ClusterID != "Kubernetes" || p.Labels["istio"] != "ingressgateway" || !p.ConnectedAt.Equal(t0) {
		t.Errorf("adsz proxy identity = %+v", p)
	}
	if p.GatewayGroup == "" || !slices.Equal(p.Gateways, []string{"istio-system/public"}) {
		t.Errorf("adsz group %q gateways %v", p.GatewayGroup, p.Gateways)
	}
	if len(p.Streams) != 1 || p.Streams[0].Peer == "" {
		t.Errorf("adsz streams = %+v", p.Streams)
	}
}

// The server's metrics, as /metrics (which the assembly mounts) shows
// its registry.
func TestServerMetrics(t *testing.T) {
	h, _ := debugHarness(t)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(h.registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{"pilot_xds 1", `pilot_xds_pushes{type="cds"} 2`, `pilot_push_triggers{type="synced"} 1`,
		"wayfinder_push_duration_seconds_count 1", `wayfinder_config_errors{kind="none",origin="source",severity="error"} 1`,
		"pilot_debounce_time_count 1", `pilot_xds_config_size_bytes_count{type="lds"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
