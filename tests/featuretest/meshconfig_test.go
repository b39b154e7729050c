package featuretest

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// meshRootFiles route to subset v1 of reviews, which only a
// DestinationRule in namespace meshroot defines: the subset's cluster
// exists only while meshroot is the root namespace.
const meshRootFiles = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.11, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: meshroot}
spec:
  host: reviews.default.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bookinfo, namespace: default}
spec:
  hosts: [bookinfo.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: reviews, subset: v1, port: {number: 9080}}}]
`

const reviewsV1Cluster = "outbound|9080|v1|reviews.default.svc.cluster.local"

func (e *env) meshz() *debugapi.Meshz {
	e.t.Helper()
	m := e.configz().Mesh
	if m == nil {
		e.t.Fatal("/debug/configz has no mesh section")
	}
	return m
}

// --mesh-config is read at start and watched: a new file (renamed over
// the old) is in force on /debug/configz and pushed in full (the mesh
// config's rootNamespace moves the fallback DestinationRules); a bad file
// is refused with file and field, shown and counted, and the last good
// one keeps serving.
func TestMeshConfigFile(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), meshRootFiles)
	meshFile := filepath.Join(t.TempDir(), "mesh")
	serverenv.WriteFile(t, meshFile, "rootNamespace: istio-system\noutboundTrafficPolicy: {mode: REGISTRY_ONLY}\n")
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, MeshConfigFile: meshFile})

	m := e.meshz()
	if m.Source != meshFile || m.Watching != meshFile || m.RootNamespace != "istio-system" || m.LastError != nil {
		t.Fatalf("mesh section at start = %+v, want the file in force, root istio-system, no error", m)
	}
	if !slices.Contains(m.Ignored, "outboundTrafficPolicy") {
		t.Errorf("ignored fields = %v, want outboundTrafficPolicy", m.Ignored)
	}
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "the first push", func(s adsc.State) bool { return allACKed(s) && s.Routes["http.80"] != nil })
	if s.Clusters[reviewsV1Cluster] != nil {
		t.Fatalf("subset cluster %s exists while meshroot is not the root namespace", reviewsV1Cluster)
	}

	serverenv.WriteFile(t, meshFile, "rootNamespace: meshroot\n")
	waitFor(t, c, "the subset cluster of meshroot's DestinationRule", func(s adsc.State) bool {
		return allACKed(s) && s.Clusters[reviewsV1Cluster] != nil
	})
	m = e.meshz()
	var inForce struct{ RootNamespace string }
	if err := json.Unmarshal(m.Config, &inForce); err != nil || m.RootNamespace != "meshroot" || inForce.RootNamespace != "meshroot" {
		t.Errorf("mesh section after the change = root %q, config's %q (%v)", m.RootNamespace, inForce.RootNamespace, err)
	}
	if got := e.metric(`pilot_push_triggers{type="mesh-config"}`); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("mesh-config push triggers = %v, want one", got)
	}

	serverenv.WriteFile(t, meshFile, "rootNamespace: istio-system\naccessLogEncoding: XML\n")
	bad := poll.Value(t, "the refusal on /debug/configz", func() (*debugapi.Meshz, error) { return e.meshz(), nil },
		func(m *debugapi.Meshz) bool { return m.LastError != nil })
	if !strings.Contains(bad.LastError.Error, meshFile) || !strings.Contains(bad.LastError.Error, "accessLogEncoding") {
		t.Errorf("last error = %q, want the file and the field", bad.LastError.Error)
	}
	if bad.RootNamespace != "meshroot" || bad.Source != meshFile {
		t.Errorf("after a bad file: root %q from %q, want the last good meshroot", bad.RootNamespace, bad.Source)
	}
	if v := e.metricValue("wayfinder_mesh_config_rejected_total"); v != 1 {
		t.Errorf("wayfinder_mesh_config_rejected_total = %v, want 1", v)
	}
	if s := c.State(); s.Clusters[reviewsV1Cluster] == nil {
		t.Errorf("the bad file took the last good mesh config's cluster away")
	}
}

// An explicit --root-namespace wins over the mesh config's.
func TestRootNamespaceFlagWinsOverMeshConfig(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), meshRootFiles)
	meshFile := filepath.Join(t.TempDir(), "mesh")
	serverenv.WriteFile(t, meshFile, "rootNamespace: elsewhere\n")
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, MeshConfigFile: meshFile, RootNamespace: "meshroot"})
	if m := e.meshz(); m.RootNamespace != "meshroot" {
		t.Fatalf("root namespace in force = %q, want the flag's meshroot", m.RootNamespace)
	}
	c := e.gateway("gw-1", publicLabels, nil)
	waitFor(t, c, "the subset cluster of meshroot's DestinationRule", func(s adsc.State) bool {
		return allACKed(s) && s.Clusters[reviewsV1Cluster] != nil
	})
}
