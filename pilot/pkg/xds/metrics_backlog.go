package xds

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

// backlogCollector reports, at scrape time, the work waiting in the server:
// per type the proxies that were given a change they have not ACKed yet
// (the convergence backlog, what the dashboard and alerts call queue
// depth), and the responses being written now against the send bound.
type backlogCollector struct{ s *DiscoveryServer }

var (
	pendingDesc = prometheus.NewDesc("wayfinder_xds_pending_proxies",
		"Proxies given a config change they have not ACKed yet, by type: the convergence backlog.", []string{"type"}, nil)
	sendsDesc = prometheus.NewDesc("wayfinder_xds_sends_in_flight",
		"Responses being written to ADS streams now (each bounded by the send timeout).", nil, nil)
)

func (c backlogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pendingDesc; ch <- sendsDesc }

func (c backlogCollector) Collect(ch chan<- prometheus.Metric) {
	counts := make(map[string]int, len(snapshot.Types))
	c.s.mu.Lock()
	for _, p := range c.s.proxies {
		for t := range p.pending {
			counts[t]++
		}
	}
	c.s.mu.Unlock()
	for _, t := range snapshot.Types {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(counts[t]), snapshot.ShortType(t))
	}
	ch <- prometheus.MustNewConstMetric(sendsDesc, prometheus.GaugeValue, float64(c.s.limits.Sending()))
}
