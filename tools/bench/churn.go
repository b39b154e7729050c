package main

// Endpoint churn: EndpointSlice updates at a fixed rate, each writing a
// marker address (workload.MarkerAddress) that names the change, and the
// time from the write to every gateway's ACK of an EDS response carrying
// it. Change k updates Service k mod N; a gateway that ACKs change k has
// also received every earlier change of that Service it had not seen (the
// newer slice replaced it), so each of those counts as delivered then, and
// every change gets a latency from every gateway.

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// churnResult is one churn phase.
type churnResult struct {
	// Rate is the updates per second asked for, Seconds the phase's
	// length; Changes were issued (AchievedRate per second), Failed of
	// them were refused by the API server.
	Rate         float64 `json:"rate_per_second"`
	Seconds      float64 `json:"seconds"`
	Changes      int     `json:"changes"`
	AchievedRate float64 `json:"achieved_rate"`
	Failed       int     `json:"failed,omitempty"`
	// Complete changes were ACKed by every gateway before the drain ended.
	Complete int `json:"complete"`
	Gateways int `json:"gateways"`
	// All*: per change, from the API write to the last gateway's ACK
	// (exact, over complete changes).
	AllP50Ms float64 `json:"all_p50_ms"`
	AllP99Ms float64 `json:"all_p99_ms"`
	AllMaxMs float64 `json:"all_max_ms"`
	// Ack*: per gateway and change, from the API write to that gateway's
	// ACK (histogram, within 2%).
	AckP50Ms float64 `json:"ack_p50_ms"`
	AckP99Ms float64 `json:"ack_p99_ms"`
	Acks     int64   `json:"acks"`
	// AnsweredP50Ms and AnsweredP99Ms are the every-gateway latencies
	// counted from the API server's answer to the write instead (0 where
	// the push beat the answer): the control plane's share.
	AnsweredP50Ms float64 `json:"answered_p50_ms"`
	AnsweredP99Ms float64 `json:"answered_p99_ms"`
	// Write*: the API server's answer to the update call.
	WriteP50Ms float64 `json:"write_p50_ms"`
	WriteP99Ms float64 `json:"write_p99_ms"`
	// The server's CPU seconds over the phase (issue and drain), per change
	// in milliseconds, and its resident set size at start and end.
	CPUSeconds     float64 `json:"cpu_seconds"`
	CPUPerChangeMs float64 `json:"cpu_per_change_ms"`
	RSSStartBytes  int64   `json:"rss_start_bytes"`
	RSSEndBytes    int64   `json:"rss_end_bytes"`
	RSSGrowthPct   float64 `json:"rss_growth_pct"`
	// HeapStartBytes and HeapEndBytes are the server's Go heap in use
	// (go_memstats_heap_inuse_bytes): RSS also holds garbage not yet
	// collected and memory the runtime has not returned.
	HeapStartBytes int64 `json:"heap_start_bytes,omitempty"`
	HeapEndBytes   int64 `json:"heap_end_bytes,omitempty"`
	// RSS is also sampled every second: RSSWarmBytes is the sample
	// WarmSeconds into the phase (30 s, a tenth of a shorter phase),
	// RSSDriftPct the growth from it to the end, and RSSMaxBytes the
	// largest sample. They tell a step at the start of the churn (the
	// collector's heap goal rising to the churn's working set) from
	// growth that goes on.
	WarmSeconds  float64 `json:"warm_seconds,omitempty"`
	RSSWarmBytes int64   `json:"rss_warm_bytes,omitempty"`
	RSSMaxBytes  int64   `json:"rss_max_bytes,omitempty"`
	RSSDriftPct  float64 `json:"rss_drift_pct,omitempty"`
	// LoadCPUSeconds is the bench's own CPU (load tool and writers).
	LoadCPUSeconds float64  `json:"load_cpu_seconds"`
	Errors         []string `json:"errors,omitempty"`
}

// maxChanges bounds the changes of one case (the marker address range).
const maxChanges = 192 << 16

// churner issues the changes and records their delivery.
type churner struct {
	kc       kubernetes.Interface
	services int
	gateways int
	duration time.Duration
	drain    time.Duration
	start    time.Time

	// next is the number of the next change; changes below it were
	// issued. Only the phase goroutine touches it.
	next int
	// Per change, indexed by number: the write's start (ns since start,
	// 0 until set), a failed write, the gateways that have it, and the
	// latest of their ACKs (ns since start).
	writeAt []atomic.Int64
	wroteAt []atomic.Int64
	failed  []atomic.Bool
	count   []atomic.Int32
	lastAck []atomic.Int64
	// acked[gw][s] is the latest change of Service s gateway gw has
	// ACKed, -1 for none; only gw's goroutine touches acked[gw].
	acked [][]int32
	// hist is the current phase's per-ACK latency histogram.
	hist atomic.Pointer[latHist]
	// notify is signalled when a change reaches every gateway.
	notify chan struct{}
}

func newChurner(cfg *rest.Config, c benchCase, ko kubeOptions) (*churner, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, r := range ko.rates {
		total += int(math.Ceil(r*ko.duration.Seconds())) + 1
	}
	total = min(total, maxChanges)
	ch := &churner{
		kc: kc, services: c.Services, gateways: c.Gateways, duration: ko.duration, drain: ko.drain, start: time.Now(),
		writeAt: make([]atomic.Int64, total), wroteAt: make([]atomic.Int64, total), failed: make([]atomic.Bool, total),
		count: make([]atomic.Int32, total), lastAck: make([]atomic.Int64, total),
		acked: make([][]int32, c.Gateways), notify: make(chan struct{}, 1),
	}
	for g := range ch.acked {
		a := make([]int32, c.Services)
		for i := range a {
			a[i] = -1
		}
		ch.acked[g] = a
	}
	ch.hist.Store(&latHist{})
	return ch, nil
}

// ack is load.Options.OnEndpointMarker: gateway gw ACKed an EDS response
// carrying change k.
func (ch *churner) ack(gw, k int) {
	if k < 0 || k >= len(ch.writeAt) || gw >= len(ch.acked) {
		return
	}
	s := k % ch.services
	last := int(ch.acked[gw][s])
	if k <= last {
		return // seen (state of the world sends it again with every push)
	}
	now := int64(time.Since(ch.start))
	h := ch.hist.Load()
	for j := k; j > last; j -= ch.services {
		at := ch.writeAt[j].Load()
		if at == 0 || ch.failed[j].Load() {
			continue
		}
		h.add(time.Duration(now - at))
		for {
			old := ch.lastAck[j].Load()
			if now <= old || ch.lastAck[j].CompareAndSwap(old, now) {
				break
			}
		}
		if int(ch.count[j].Add(1)) == ch.gateways {
			select {
			case ch.notify <- struct{}{}:
			default:
			}
		}
	}
	ch.acked[gw][s] = int32(k)
}

// churnWorkers is how many update calls may be in flight (on a loaded
// 2-core machine an update can take a quarter of a second, and 200/s must
// still be offered); change k goes to worker k mod N mod churnWorkers, so
// one Service's changes are written in order.
const churnWorkers = 96

// phase runs one churn phase at rate per second and waits for its changes
// to reach every gateway (up to the drain time).
func (ch *churner) phase(ctx context.Context, p *proc, metricsURL string, rate float64) churnResult {
	res := churnResult{Rate: rate, Gateways: ch.gateways}
	hist, writes := &latHist{}, &latHist{}
	ch.hist.Store(hist)
	u0, err0 := p.usage()
	rss0, err1 := p.currentRSS()
	self0, _ := selfCPUSeconds()
	heap0, err2 := scrapeGauge(ctx, metricsURL, heapMetric)
	if err := firstErr(err0, err1, err2); err != nil {
		res.Errors = append(res.Errors, "reading server usage: "+err.Error())
	}
	first := ch.next
	warm := warmUp(ch.duration)
	sampler := sampleRSS(p, time.Second)

	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		queues  [churnWorkers]chan int
		started = time.Now()
	)
	for w := range queues {
		queues[w] = make(chan int, 256)
		wg.Go(func() {
			for k := range queues[w] {
				s := k % ch.services
				es := workload.KubeEndpointSlice(s, workload.DefaultEndpoints, k)
				t := time.Now()
				ch.writeAt[k].Store(max(int64(t.Sub(ch.start)), 1))
				_, err := ch.kc.DiscoveryV1().EndpointSlices(workload.ServiceNamespace).Update(ctx, es, metav1.UpdateOptions{})
				writes.add(time.Since(t))
				ch.wroteAt[k].Store(int64(time.Since(ch.start)))
				if err != nil {
					ch.failed[k].Store(true)
					errMu.Lock()
					res.Failed++
					if len(res.Errors) < 5 {
						res.Errors = append(res.Errors, fmt.Sprintf("change %d: EndpointSlice %s/%s: %v", k, workload.ServiceNamespace, es.Name, err))
					}
					errMu.Unlock()
				}
			}
		})
	}
	interval := time.Duration(float64(time.Second) / rate)
	duration := ch.duration
issue:
	for i := 0; ch.next < len(ch.writeAt); i++ {
		// Open loop, bounded by the clock: when the writers fall behind,
		// the phase still ends on time and the achieved rate says so.
		at := started.Add(time.Duration(i) * interval)
		if at.Sub(started) >= duration || time.Since(started) >= duration {
			break
		}
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				break issue
			case <-t.C:
			}
		}
		k := ch.next
		ch.next++
		select {
		case queues[k%ch.services%churnWorkers] <- k:
		case <-ctx.Done():
			break issue
		}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	res.Seconds = duration.Seconds()
	res.Changes = ch.next - first
	res.AchievedRate = round2(float64(res.Changes) / duration.Seconds())

	// Drain: wait for the phase's changes to reach every gateway.
	deadline := time.NewTimer(ch.drain)
	defer deadline.Stop()
	pending := first
drain:
	for {
		for pending < ch.next && ch.delivered(pending) {
			pending++
		}
		if pending == ch.next {
			break
		}
		select {
		case <-ch.notify:
		case <-deadline.C:
			break drain
		case <-ctx.Done():
			break drain
		}
	}

	u1, err0 := p.usage()
	rss1, err1 := p.currentRSS()
	self1, _ := selfCPUSeconds()
	heap1, err2 := scrapeGauge(ctx, metricsURL, heapMetric)
	if err := firstErr(err0, err1, err2); err != nil {
		res.Errors = append(res.Errors, "reading server usage: "+err.Error())
	}
	res.CPUSeconds = round2(u1.CPUSeconds - u0.CPUSeconds)
	res.LoadCPUSeconds = round2(self1 - self0)
	if res.Changes > 0 {
		res.CPUPerChangeMs = round2(res.CPUSeconds * 1000 / float64(res.Changes))
	}
	res.RSSStartBytes, res.RSSEndBytes = rss0, rss1
	res.HeapStartBytes, res.HeapEndBytes = int64(heap0), int64(heap1)
	if rss0 > 0 {
		res.RSSGrowthPct = round2(float64(rss1-rss0) * 100 / float64(rss0))
	}
	samples := sampler.stop()
	res.WarmSeconds = warm.Seconds()
	res.RSSWarmBytes, res.RSSMaxBytes = rssAt(samples, warm), max(rss1, rssMax(samples))
	if res.RSSWarmBytes > 0 {
		res.RSSDriftPct = round2(float64(rss1-res.RSSWarmBytes) * 100 / float64(res.RSSWarmBytes))
	}
	var all, answered []time.Duration
	for k := first; k < ch.next; k++ {
		if !ch.failed[k].Load() && int(ch.count[k].Load()) == ch.gateways {
			all = append(all, time.Duration(ch.lastAck[k].Load()-ch.writeAt[k].Load()))
			answered = append(answered, time.Duration(max(ch.lastAck[k].Load()-ch.wroteAt[k].Load(), 0)))
		}
	}
	slices.Sort(all)
	slices.Sort(answered)
	res.Complete = len(all)
	if len(all) > 0 {
		res.AllP50Ms = msOf(pct(all, 50))
		res.AllP99Ms = msOf(pct(all, 99))
		res.AllMaxMs = msOf(all[len(all)-1])
		res.AnsweredP50Ms, res.AnsweredP99Ms = msOf(pct(answered, 50)), msOf(pct(answered, 99))
	}
	res.Acks = hist.n.Load()
	res.AckP50Ms, res.AckP99Ms = msOf(hist.pct(50)), msOf(hist.pct(99))
	res.WriteP50Ms, res.WriteP99Ms = msOf(writes.pct(50)), msOf(writes.pct(99))
	return res
}

// warmUp is how far into a phase of length d its RSS is read a second
// time: 30 s, or a tenth of a shorter phase.
func warmUp(d time.Duration) time.Duration { return min(30*time.Second, d/10) }

// rssSample is the server's RSS at a time since the phase started.
type rssSample struct {
	at  time.Duration
	rss int64
}

// rssSampler reads the server's RSS every interval until stopped.
type rssSampler struct {
	done    chan struct{}
	samples chan []rssSample
}

func sampleRSS(p *proc, interval time.Duration) *rssSampler {
	s := &rssSampler{done: make(chan struct{}), samples: make(chan []rssSample, 1)}
	start := time.Now()
	go func() {
		var out []rssSample
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				s.samples <- out
				return
			case <-t.C:
				if rss, err := p.currentRSS(); err == nil {
					out = append(out, rssSample{at: time.Since(start), rss: rss})
				}
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the samples in time order.
func (s *rssSampler) stop() []rssSample {
	close(s.done)
	return <-s.samples
}

// rssAt is the first sample at or after at, 0 if there is none.
func rssAt(samples []rssSample, at time.Duration) int64 {
	for _, s := range samples {
		if s.at >= at {
			return s.rss
		}
	}
	return 0
}

func rssMax(samples []rssSample) int64 {
	var m int64
	for _, s := range samples {
		m = max(m, s.rss)
	}
	return m
}

// delivered reports whether change k reached every gateway (or failed,
// so never will).
func (ch *churner) delivered(k int) bool {
	return ch.failed[k].Load() || int(ch.count[k].Load()) >= ch.gateways
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func msOf(d time.Duration) float64 { return round2(float64(d) / 1e6) }

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// latHist is a lock-free latency histogram with buckets 2% wide, from
// 1 µs to beyond 10 minutes.
type latHist struct {
	n       atomic.Int64
	buckets [histBuckets]atomic.Int64
}

const (
	histBuckets = 1100
	histGrowth  = 1.02
)

func (h *latHist) add(d time.Duration) {
	us := max(float64(d)/1e3, 1)
	i := min(int(math.Log(us)/math.Log(histGrowth)), histBuckets-1)
	h.buckets[i].Add(1)
	h.n.Add(1)
}

// pct is the p-th percentile, as its bucket's upper bound.
func (h *latHist) pct(p float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(p/100*float64(n))), 1)
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			return time.Duration(math.Pow(histGrowth, float64(i+1)) * 1e3)
		}
	}
	return time.Duration(math.Pow(histGrowth, histBuckets) * 1e3)
}

// heapMetric is the Go heap in use, from pilot-discovery's /metrics.
const heapMetric = "go_memstats_heap_inuse_bytes"

// scrapeGauge reads one unlabelled metric from a Prometheus text page.
func scrapeGauge(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s", url, name)
}
