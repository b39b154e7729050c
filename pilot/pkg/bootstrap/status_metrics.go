package bootstrap

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerStatusMetrics exposes, per status writer, whether this replica
// holds its Lease and how many status updates it has made: with several
// replicas exactly one should lead each Lease and only it should write.
func (m *kubeMode) registerStatusMetrics(reg prometheus.Registerer) {
	type writer struct {
		name   string
		leader func() bool
		writes func() int64
	}
	var ws []writer
	if m.status != nil {
		ws = append(ws, writer{name: "ingress", leader: m.status.IsLeader, writes: m.status.Writes})
	}
	if m.istioStatus != nil {
		// Gateway API status is written under the same Lease and counted with it.
		ws = append(ws, writer{name: "istio", leader: m.istioStatus.IsLeader, writes: m.istioStatus.Writes})
	}
	for _, w := range ws {
		labels := prometheus.Labels{"writer": w.name}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "wayfinder_status_leader", ConstLabels: labels,
				Help: "1 while this replica holds the writer's Lease and writes its status, else 0.",
			}, func() float64 {
				if w.leader() {
					return 1
				}
				return 0
			}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "wayfinder_status_writes_total", ConstLabels: labels,
				Help: "Status updates this replica made (istio: Istio and Gateway API objects; ingress: Ingresses).",
			}, func() float64 { return float64(w.writes()) }),
		)
	}
}
