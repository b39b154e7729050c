package xds

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// metrics are the server's Prometheus metrics; the package comment lists
// them and explains the naming scheme.
type metrics struct {
	pushes       *prometheus.CounterVec
	connected    prometheus.Gauge
	rejects      *prometheus.CounterVec
	debounce     prometheus.Histogram
	convergence  prometheus.Histogram
	configSize   *prometheus.HistogramVec
	triggers     *prometheus.CounterVec
	pushDuration prometheus.Histogram
	translations *prometheus.CounterVec
	marshals     *prometheus.CounterVec
	encodings    *prometheus.CounterVec
}

// Bucket boundaries in seconds follow Istio's for the metrics named after
// Istio's, so the histograms compare.
var (
	latencyBuckets = []float64{.01, .1, 1, 3, 5, 10, 20, 30}
	convergeBucket = []float64{.1, .5, 1, 3, 5, 10, 20, 30}
	sizeBuckets    = []float64{1, 10000, 1000000, 4000000, 10000000, 40000000}
)

// newMetrics registers the metrics on reg. currentErrors is read at each
// scrape for wayfinder_config_errors, so the gauge shows the problems
// standing now, including source errors that arrived after the last push.
func newMetrics(reg prometheus.Registerer, currentErrors func() (source, translation []*config.Error)) *metrics {
	m := &metrics{
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pilot_xds_pushes", Help: "xDS responses sent to proxies, by type (cds, eds, lds, rds, sds).",
		}, []string{"type"}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pilot_xds", Help: "Proxies (distinct node ids) connected over ADS.",
		}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pilot_total_xds_rejects", Help: "xDS responses rejected (NACKed) by proxies, by type.",
		}, []string{"type"}),
		debounce: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pilot_debounce_time", Help: "Seconds from the first config change of a merged push request to its push.",
			Buckets: latencyBuckets,
		}),
		convergence: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pilot_proxy_convergence_time", Help: "Seconds from a config change to the proxy's ACK of the changed type.",
			Buckets: convergeBucket,
		}),
		configSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pilot_xds_config_size_bytes", Help: "Size in bytes of each xDS response sent, by type.",
			Buckets: sizeBuckets,
		}, []string{"type"}),
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pilot_push_triggers", Help: "Reasons for pushes; type is the reason.",
		}, []string{"type"}),
		pushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wayfinder_push_duration_seconds",
			Help:    "Seconds to compute one push: push context, translation, marshaling, views for every connected proxy.",
			Buckets: latencyBuckets,
		}),
		translations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_translations_total",
			Help: "Translator runs: what=services (once per full push), endpoints (once per endpoints-only push), gateway (once per gateway group), gateway-warm (a full push with no proxy connected translating each Gateway selector's configuration ahead of its proxies) or proxyless (once per push with proxyless clients).",
		}, []string{"what"}),
		marshals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_xds_marshal_total",
			Help: "Generated resources marshaled, by type: once per new content, never per proxy or per send.",
		}, []string{"type"}),
		encodings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_xds_response_encodings_total",
			Help: "Discovery responses serialized, by type: once per distinct response content (type set, resources, removals), shared by every stream sent it.",
		}, []string{"type"}),
	}
	reg.MustRegister(m.pushes, m.connected, m.rejects, m.debounce, m.convergence, m.configSize,
		m.triggers, m.pushDuration, m.translations, m.marshals, m.encodings, &configErrorsCollector{current: currentErrors})
	return m
}

var configErrorsDesc = prometheus.NewDesc("wayfinder_config_errors",
	"Config problems standing now, by Istio kind at fault (or none), origin (source or translation) and severity (error or warning).",
	[]string{"kind", "origin", "severity"}, nil)

// configErrorsCollector computes wayfinder_config_errors at scrape time.
type configErrorsCollector struct {
	current func() (source, translation []*config.Error)
}

func (c *configErrorsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- configErrorsDesc }

func (c *configErrorsCollector) Collect(ch chan<- prometheus.Metric) {
	src, tr := c.current()
	counts := map[[3]string]int{}
	add := func(origin string, errs []*config.Error) {
		for _, e := range errs {
			kind := "none"
			if e.Key.Kind != 0 {
				kind = e.Key.Kind.String()
			}
			sev := "error"
			if e.Warning {
				sev = "warning"
			}
			counts[[3]string{kind, origin, sev}]++
		}
	}
	add("source", src)
	add("translation", tr)
	for l, n := range counts {
		ch <- prometheus.MustNewConstMetric(configErrorsDesc, prometheus.GaugeValue, float64(n), l[0], l[1], l[2])
	}
}

// countMarshal counts one resource marshaled into a new shared Any.
func (s *DiscoveryServer) countMarshal(typeURL string) {
	s.metrics.marshals.WithLabelValues(snapshot.MetricType(typeURL)).Inc()
}

// countEncoding counts one serialized response body.
func (s *DiscoveryServer) countEncoding(typeURL string) {
	s.metrics.encodings.WithLabelValues(snapshot.MetricType(typeURL)).Inc()
}
