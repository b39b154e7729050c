package kube

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// meshz reads the mesh section of /debug/configz with a debug admin's
// token (one of podNamespace).
func meshz(t *testing.T, e *env, podNamespace string) (*debugapi.Meshz, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+e.server.HTTPAddr().String()+"/debug/configz", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+debugAdminToken(t, podNamespace))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var cz debugapi.Configz
	if err := json.Unmarshal(body, &cz); err != nil || cz.Mesh == nil {
		t.Fatalf("/debug/configz: %s: %s (%v)", resp.Status, body, err)
	}
	return cz.Mesh, nil
}

// Without --mesh-config, the istio ConfigMap of the server's namespace
// (key mesh) is the mesh config, as istiod reads it, against the real API
// server: read at start, an update is in force on /debug/configz, a bad
// one is refused naming the ConfigMap and field and the last good one
// kept, and a deleted ConfigMap is istiod's defaults.
func TestMeshConfigFromConfigMap(t *testing.T) {
	c, ns := newCluster(t, "mesh")
	e := clientEnv(t, c, ns)
	cms := e.kube.CoreV1().ConfigMaps(ns)
	cm := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "istio"}, Data: map[string]string{"mesh": data}}
	}
	_, err := cms.Create(ctx, cm("rootNamespace: first\n"), metav1.CreateOptions{})
	e.must(err)
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns}, PodNamespace: ns})

	src := "ConfigMap " + ns + "/istio key mesh"
	m, err := meshz(t, e, ns)
	e.must(err)
	if m.Source != src || m.Watching != src || m.RootNamespace != "first" {
		t.Fatalf("mesh config at start: source %q watching %q root %q; want the ConfigMap's first", m.Source, m.Watching, m.RootNamespace)
	}

	_, err = cms.Update(ctx, cm("rootNamespace: second\n"), metav1.UpdateOptions{})
	e.must(err)
	poll.Value(t, "the updated ConfigMap in force", func() (*debugapi.Meshz, error) { return meshz(t, e, ns) },
		func(m *debugapi.Meshz) bool { return m.RootNamespace == "second" })

	_, err = cms.Update(ctx, cm("rootNamespace: third\naccessLogEncoding: XML\n"), metav1.UpdateOptions{})
	e.must(err)
	m = poll.Value(t, "the refusal", func() (*debugapi.Meshz, error) { return meshz(t, e, ns) },
		func(m *debugapi.Meshz) bool { return m.LastError != nil })
	if m.RootNamespace != "second" || !strings.Contains(m.LastError.Error, src) || !strings.Contains(m.LastError.Error, "accessLogEncoding") {
		t.Fatalf("after a bad mesh: root %q, error %q; want second kept and an error naming %s and accessLogEncoding", m.RootNamespace, m.LastError.Error, src)
	}
	if v := e.metric("wayfinder_mesh_config_rejected_total"); v != 1 {
		t.Errorf("wayfinder_mesh_config_rejected_total = %v, want 1", v)
	}

	e.must(cms.Delete(ctx, "istio", metav1.DeleteOptions{}))
	m = poll.Value(t, "istiod's defaults once the ConfigMap is gone", func() (*debugapi.Meshz, error) { return meshz(t, e, ns) },
		func(m *debugapi.Meshz) bool { return m.RootNamespace == "istio-system" })
	if m.LastError != nil || m.Source != "defaults" {
		t.Errorf("after deletion: source %q, last error %+v; want defaults and none", m.Source, m.LastError)
	}
}
