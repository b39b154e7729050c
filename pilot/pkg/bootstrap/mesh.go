package bootstrap

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/meshwatch"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// meshSource is the mesh config of the server: istiod's defaults, a
// --mesh-config file (both modes), or in Kubernetes mode without one the
// istio ConfigMap of --pod-namespace, as istiod reads it. A change is
// pushed as a full push, like any config change.
type meshSource struct {
	tracker  *meshwatch.Tracker
	file     *meshwatch.FileWatcher      // nil: no --mesh-config
	cm       *meshwatch.ConfigMapWatcher // nil: not watching the ConfigMap
	watching mesh.Source
	// rootNamespace is --root-namespace; empty: the mesh config's.
	rootNamespace string

	mu   sync.Mutex
	push func(*model.PushRequest) // set once the discovery server exists
}

// newMeshSource reads the --mesh-config file, if any, so the server
// starts with it (a file that cannot be read or is refused fails the
// start), or builds the ConfigMap watcher.
func newMeshSource(opts Options, kube *kubeMode) (*meshSource, error) {
	log := opts.Logger.With("component", "mesh-config")
	m := &meshSource{rootNamespace: opts.RootNamespace}
	holder := mesh.NewHolder(mesh.HolderOptions{Logger: log, OnChange: m.changed})
	m.tracker = meshwatch.NewTracker(holder, log, nil)
	switch {
	case opts.MeshConfigFile != "":
		m.watching = mesh.FileSource(opts.MeshConfigFile)
		w, err := meshwatch.NewFile(meshwatch.FileOptions{Path: opts.MeshConfigFile, Tracker: m.tracker,
			Debounce: opts.MeshConfigDebounce, Clock: opts.Debounce.Clock, Logger: log})
		if err != nil {
			return nil, err
		}
		m.file = w
	case kube != nil && opts.PodNamespace != "":
		m.watching = mesh.ConfigMapSource(opts.PodNamespace, mesh.ConfigMapName)
		w, err := meshwatch.NewConfigMap(meshwatch.ConfigMapOptions{Client: kube.clients.Kube,
			Namespace: opts.PodNamespace, Tracker: m.tracker, Logger: log})
		if err != nil {
			return nil, err
		}
		m.cm = w
	case kube != nil:
		log.Info("mesh config: istiod's defaults; give --mesh-config, or --pod-namespace to watch the istio ConfigMap there")
	}
	return m, nil
}

// current is the mesh config in force, for each full push.
func (m *meshSource) current() *mesh.Config { return m.tracker.Current() }

// setPush routes changes to the discovery server; changes before it (the
// file read at start) need no push.
func (m *meshSource) setPush(push func(*model.PushRequest)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.push = push
}

// changed is the Holder's OnChange: a full push, with no object named
// (everything may depend on the mesh config).
func (m *meshSource) changed(_, next *mesh.Config) {
	m.mu.Lock()
	push := m.push
	m.mu.Unlock()
	if push != nil {
		// No Start: the server stamps it with its clock.
		push(&model.PushRequest{Full: true, Reasons: map[string]int{"mesh-config": 1}})
	}
}

// run watches the source until ctx ends.
func (m *meshSource) run(ctx context.Context) {
	switch {
	case m.file != nil:
		m.file.Run(ctx)
	case m.cm != nil:
		m.cm.Run(ctx)
	}
}

// hasSynced reports whether the mesh config to start with has been read.
func (m *meshSource) hasSynced() bool { return m.cm == nil || m.cm.HasSynced() }

// inForceRootNamespace is the root namespace pushes use now.
func (m *meshSource) inForceRootNamespace() string {
	if m.rootNamespace != "" {
		return m.rootNamespace
	}
	if ns := m.current().Mesh.GetRootNamespace(); ns != "" {
		return ns
	}
	return model.DefaultRootNamespace
}

// section shows the mesh config in force in /debug/configz.
func (m *meshSource) section() debug.Section {
	return debug.Section{Name: debugapi.MeshSection, Value: func() any { return m.meshz() }}
}

func (m *meshSource) meshz() *debugapi.Meshz {
	cur := m.current()
	out := &debugapi.Meshz{Source: cur.Source.String(), Watching: m.watching.String(),
		RootNamespace: m.inForceRootNamespace(), Ignored: cur.Ignored(), Rejected: m.tracker.Rejected()}
	if b, err := protojson.Marshal(cur.Mesh); err == nil {
		out.Config = json.RawMessage(b)
	}
	for _, w := range cur.Warnings {
		out.Warnings = append(out.Warnings, w.Error())
	}
	if le := m.tracker.LastError(); le != nil {
		out.LastError = &debugapi.MeshErrorz{Source: le.Source.String(), Error: le.Err.Error(), Time: le.At.UTC()}
	}
	return out
}

// registerMetrics exposes the refusals: a refused mesh config leaves the
// last good one serving, which only the logs, /debug/configz and this
// counter tell.
func (m *meshSource) registerMetrics(reg prometheus.Registerer) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "wayfinder_mesh_config_rejected_total",
		Help: "Mesh config updates refused (invalid) or unreadable since start; the last good mesh config stays in force.",
	}, func() float64 { return float64(m.tracker.Rejected()) }))
}
