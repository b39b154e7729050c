package featuretest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

func (e *env) configz() debugapi.Configz {
	e.t.Helper()
	code, body := e.get("/debug/configz")
	if code != 200 {
		e.t.Fatalf("configz: %d %s", code, body)
	}
	var out debugapi.Configz
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) syncz() debugapi.Syncz {
	e.t.Helper()
	code, body := e.get("/debug/syncz")
	if code != 200 {
		e.t.Fatalf("syncz: %d %s", code, body)
	}
	var out debugapi.Syncz
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// metric returns the lines of /metrics that start with name.
func (e *env) metric(name string) []string {
	e.t.Helper()
	_, body := e.get("/metrics")
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name) {
			out = append(out, line)
		}
	}
	return out
}

// A file that stops parsing keeps serving what it last parsed; the error
// names the file and document and shows in configz and metrics; other
// files' changes still go through; fixing it applies the fix.
func TestMalformedFileKeepsLastGoodConfig(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	waitFor(t, c, "initial", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	e.write("routes.yaml", routesYAML("/broken")+"\n  this is: [not yaml\n")
	// Another file changes: the push it causes must still carry routes.yaml's last good routes.
	e.write("services.yaml", replaceOnce(t, servicesYAML, "127.0.0.12", "127.0.0.22"))
	s := waitFor(t, c, "other file's change", func(s adsc.State) bool {
		return slices.Contains(endpointAddresses(s, reviewsV2), "127.0.0.22")
	})
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") || hasPrefix(s, "http.80", "bookinfo.example.com:80", "/broken") {
		t.Errorf("routes after a bad edit: %v", routePrefixes(s, "http.80"))
	}
	cz := e.configz()
	if !slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
		return ce.Origin == "source" && strings.Contains(ce.Source, "routes.yaml (document 1)")
	}) {
		t.Errorf("configz errors do not name routes.yaml: %+v", cz.Errors)
	}
	if !slices.ContainsFunc(cz.Configs, func(o debugapi.ConfigzObject) bool { return o.Kind == "VirtualService" && o.Name == "bookinfo" }) {
		t.Error("the last good VirtualService left configz")
	}
	if got := e.metric("wayfinder_config_errors{"); len(got) == 0 {
		t.Error("no wayfinder_config_errors series for the bad file")
	}

	e.write("routes.yaml", routesYAML("/fixed"))
	waitFor(t, c, "fix applied", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/fixed") })
	if errs := e.configz().Errors; slices.ContainsFunc(errs, func(ce debugapi.ConfigzError) bool { return strings.Contains(ce.Source, "routes.yaml") }) {
		t.Errorf("error stayed after the fix: %+v", errs)
	}
}

// An invalid object is skipped with an error naming its field; the valid
// objects of the same file and of other files are still pushed.
func TestInvalidObjectSkippedOthersPushed(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	waitFor(t, c, "initial", allACKed)

	bad := `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bad-weights, namespace: default}
spec:
  hosts: [bad.example.com]
  gateways: [istio-system/public]
  http:
  - route:
    - {destination: {host: reviews.default.svc.cluster.local, subset: v1}, weight: 150}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: good, namespace: default}
spec:
  hosts: [good.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: reviews.default.svc.cluster.local, subset: v2}}]
`
	e.write("mixed.yaml", bad)
	s := waitFor(t, c, "good VirtualService", func(s adsc.State) bool { return slices.Contains(domains(s, "http.80"), "good.example.com") })
	if slices.Contains(domains(s, "http.80"), "bad.example.com") {
		t.Errorf("invalid VirtualService was pushed: %v", domains(s, "http.80"))
	}
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Error("unrelated routes lost")
	}
	errs := e.configz().Errors
	if !slices.ContainsFunc(errs, func(ce debugapi.ConfigzError) bool {
		return ce.Name == "bad-weights" && ce.Field == "spec.http[0].route[0].weight" && strings.Contains(ce.Source, "mixed.yaml (document 1)")
	}) {
		t.Errorf("no error naming file, object and field: %+v", errs)
	}
}

// Deleting a file while proxies are connected removes its objects from
// every proxy, and nothing else.
func TestFileDeletedWhileConnected(t *testing.T) {
	e := newEnv(t, baseFiles())
	a := e.gateway("gw-a", publicLabels, nil)
	b := e.gateway("gw-b", publicLabels, nil)
	for _, c := range []*adsc.Client{a, b} {
		waitFor(t, c, "initial", func(s adsc.State) bool {
			return allACKed(s) && slices.Contains(domains(s, "http.80"), "bookinfo.example.com")
		})
	}
	e.remove("routes.yaml")
	for _, c := range []*adsc.Client{a, b} {
		s := waitFor(t, c, "routes removed", func(s adsc.State) bool { return !slices.Contains(domains(s, "http.80"), "bookinfo.example.com") })
		if s.Listeners["0.0.0.0_80"] == nil || s.Clusters[reviewsV1] == nil {
			t.Errorf("deleting routes.yaml took more than its routes: %s", describe(s))
		}
	}
}

// A proxy that rejects config stays on its last good config; the NACK
// shows in syncz and the NACK metric, is not answered by a resend of the
// same config, and the next change reaches the proxy.
func TestNACKKeepsLastGoodConfig(t *testing.T) {
	e := newEnv(t, baseFiles())
	reject := func(typeURL string, res []*anypb.Any) error {
		if typeURL != adsc.RouteType {
			return nil
		}
		for _, a := range res {
			var rc routev3.RouteConfiguration
			if err := a.UnmarshalTo(&rc); err == nil && strings.Contains(rc.String(), "/poison") {
				return errors.New("test proxy refuses /poison")
			}
		}
		return nil
	}
	c := e.gateway("gw-picky", publicLabels, reject)
	good := waitFor(t, c, "initial", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	e.write("routes.yaml", routesYAML("/poison"))
	s := waitFor(t, c, "NACK", func(s adsc.State) bool { return s.Types[adsc.RouteType].NACKs == 1 })
	if s.Version(adsc.RouteType) != good.Version(adsc.RouteType) || !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Errorf("proxy left its last good routes: %v", routePrefixes(s, "http.80"))
	}

	// A change to another type is a barrier: had the server resent the
	// rejected routes, the NACK count would have grown by now.
	e.write("services.yaml", replaceOnce(t, servicesYAML, "127.0.0.12", "127.0.0.32"))
	s = waitFor(t, c, "endpoint change after NACK", func(s adsc.State) bool {
		return slices.Contains(endpointAddresses(s, reviewsV2), "127.0.0.32")
	})
	if n := s.Types[adsc.RouteType].NACKs; n != 1 {
		t.Errorf("rejected routes were resent: %d NACKs", n)
	}

	var nacked *debugapi.SyncType
	for _, p := range e.syncz().Proxies {
		if strings.Contains(p.ID, "gw-picky") {
			for i := range p.Types {
				if p.Types[i].TypeURL == adsc.RouteType {
					nacked = &p.Types[i]
				}
			}
		}
	}
	if nacked == nil || nacked.Status != "NACKED" || nacked.LastNack == nil || !strings.Contains(nacked.LastNack.Message, "refuses /poison") ||
		nacked.AckedVersion != good.Version(adsc.RouteType) {
		t.Errorf("syncz for RDS: %+v", nacked)
	}
	if got := e.metric("pilot_total_xds_rejects{"); !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "rds") && strings.HasSuffix(l, " 1") }) {
		t.Errorf("NACK metric: %v", got)
	}
	// The per-object view (what Kubernetes mode writes to status) puts
	// the NACK on the VirtualServices that produced the routes.
	var onVS []string
	for _, o := range e.configz().Status {
		if o.Kind == "VirtualService" && o.Nacked == 1 && strings.Contains(o.FirstNack, "refuses /poison") {
			onVS = append(onVS, o.Name)
		}
	}
	if len(onVS) == 0 {
		t.Errorf("configz status names no VirtualService with the NACK: %+v", e.configz().Status)
	}

	e.write("routes.yaml", routesYAML("/healed"))
	s = waitFor(t, c, "next change", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/healed") })
	if s.Types[adsc.RouteType].Error != "" {
		t.Errorf("error not cleared: %s", s.Types[adsc.RouteType].Error)
	}
}

// The debug endpoints describe connected proxies and what they were sent.
func TestDebugEndpoints(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "initial", allACKed)
	id := adsc.NodeID(adsc.NodeOptions{IP: "127.0.0.1", PodName: "gw-1", Namespace: "istio-system"})

	if code, _ := e.get("/healthz/ready"); code != 200 {
		t.Errorf("ready: %d", code)
	}
	code, body := e.get("/debug/adsz")
	var adsz debugapi.Adsz
	if code != 200 || json.Unmarshal([]byte(body), &adsz) != nil || adsz.TotalProxies != 1 || adsz.Proxies[0].ID != id ||
		!slices.Equal(adsz.Proxies[0].Gateways, []string{"istio-system/public"}) {
		t.Errorf("adsz: %d %s", code, body)
	}
	code, body = e.get("/debug/config_dump?proxyID=" + id)
	if code != 200 || !containsAll(body, "envoy.admin.v3.ClustersConfigDump", "envoy.admin.v3.ListenersConfigDump",
		"envoy.admin.v3.RoutesConfigDump", "envoy.admin.v3.EndpointsConfigDump", "0.0.0.0_80", "http.80", s.Version(adsc.RouteType)) {
		t.Errorf("config_dump: %d %.400s", code, body)
	}
	if code, body := e.get("/debug/config_dump?proxyID=router~1.2.3.4~nope.ns~ns.svc.cluster.local"); code != 404 || !strings.Contains(body, "nope") {
		t.Errorf("unknown proxy: %d %s", code, body)
	}
	code, body = e.get("/debug/list")
	if code != 200 || !containsAll(body, "/debug/configz", "/debug/syncz", "/debug/adsz", "/debug/config_dump") {
		t.Errorf("list: %d %s", code, body)
	}
	// The client counts a type ACKed once it has sent the ACK; the server
	// records it a moment later, so wait for syncz to catch up.
	synced := func(sz debugapi.Syncz) bool {
		for _, p := range sz.Proxies {
			for _, ty := range p.Types {
				if ty.Status != "SYNCED" || ty.AckedVersion != s.Version(ty.TypeURL) {
					return false
				}
			}
		}
		return len(sz.Proxies) == 1
	}
	var sz debugapi.Syncz
	// Not fatal: the checks below say what is out of sync.
	_ = poll.Wait(func() bool { sz = e.syncz(); return synced(sz) }, poll.Timeout(10*time.Second), poll.Interval(10*time.Millisecond))
	for _, p := range sz.Proxies {
		for _, ty := range p.Types {
			if ty.Status != "SYNCED" || ty.AckedVersion != s.Version(ty.TypeURL) {
				t.Errorf("syncz %s: %+v", ty.Type, ty)
			}
		}
	}
	if len(sz.Proxies) != 1 {
		t.Errorf("syncz proxies: %+v", sz.Proxies)
	}
	if got := e.metric("pilot_xds "); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("connected proxies metric: %v", got)
	}
}
