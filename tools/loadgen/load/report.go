package load

import (
	"math"
	"slices"
	"time"
)

// Report is the load tool's result, printed as JSON.
type Report struct {
	// Mode is "sotw" or "delta".
	Mode     string `json:"mode"`
	Address  string `json:"address"`
	Gateways int    `json:"gateways"`
	// Cold is the time from the start to each gateway having ACKed all
	// four types.
	Cold Latency `json:"cold"`
	// Update is the time from the trigger to each gateway having ACKed a
	// route configuration with the new prefix; nil without an update.
	Update *Latency `json:"update,omitempty"`
	// BytesPerProxy are the response bytes received per gateway.
	BytesPerProxy Bytes `json:"bytes_per_proxy"`
	// Responses counts responses received by all gateways.
	Responses int64 `json:"responses"`
	// NACKs counts responses rejected because they did not decode or
	// validate; NACKSamples are the first few reasons.
	NACKs       int64    `json:"nacks"`
	NACKSamples []string `json:"nack_samples,omitempty"`
	// Errors counts failed streams (each is retried after a backoff) and
	// other failures; ErrorSamples are the first few.
	Errors       int64    `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	// Reconnects counts streams opened after the first, over all gateways.
	Reconnects int64 `json:"reconnects"`
	// UniqueParses counts distinct response contents decoded: the work
	// the shared parse cache did instead of one parse per response.
	UniqueParses int64 `json:"unique_parses"`
	// Unimplemented is set when the server answered Unimplemented (for
	// delta: it does not serve delta xDS yet).
	Unimplemented bool `json:"unimplemented,omitempty"`
	// TimedOut is set when --timeout ended the run before convergence.
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// Latency summarises per-gateway convergence times, in milliseconds.
type Latency struct {
	// Converged gateways out of Total; the percentiles cover the converged.
	Converged int     `json:"converged"`
	Total     int     `json:"total"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// Bytes summarises bytes received per gateway.
type Bytes struct {
	Mean float64 `json:"mean"`
	Max  int64   `json:"max"`
}

// Percentile is the nearest-rank percentile p (0 < p <= 100) of sorted:
// the smallest value with at least p% of the values at or below it.
// It returns 0 for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// summarize builds a Latency from the converged gateways' durations
// (negative for gateways that did not converge).
func summarize(ds []time.Duration) Latency {
	var ok []time.Duration
	for _, d := range ds {
		if d >= 0 {
			ok = append(ok, d)
		}
	}
	slices.Sort(ok)
	l := Latency{Converged: len(ok), Total: len(ds)}
	if len(ok) > 0 {
		l.P50Ms = ms(Percentile(ok, 50))
		l.P99Ms = ms(Percentile(ok, 99))
		l.MaxMs = ms(ok[len(ok)-1])
	}
	return l
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

func summarizeBytes(bs []int64) Bytes {
	var b Bytes
	var sum int64
	for _, v := range bs {
		sum += v
		b.Max = max(b.Max, v)
	}
	if len(bs) > 0 {
		b.Mean = math.Round(float64(sum) / float64(len(bs)))
	}
	return b
}
