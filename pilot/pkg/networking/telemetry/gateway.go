package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// ForProxy is the telemetry of proxy p's gateway listeners under push:
// the push's mesh config and Telemetry objects, the root namespace in
// force, and the proxy's namespace, labels, Gateway API gateway and
// PROXY_CONFIG. Provider services resolve against the services p's view
// sees (push should be push.ForProxy(p)); a provider whose service or
// port has no cluster there is left out and named in Problems, since
// Envoy rejects a logger or tracer naming a cluster it does not have. p
// nil is a proxy nothing is known of: only the root namespace's
// Telemetry and the mesh config apply.
func ForProxy(push *model.PushContext, p *model.Proxy) Result {
	in := Input{
		Mesh:          push.Mesh(),
		Telemetries:   Telemetries(push.Telemetries()),
		RootNamespace: push.RootNamespace(),
		Getenv:        os.Getenv,
	}
	if p != nil {
		in.Proxy = Proxy{
			Namespace:      p.Namespace,
			Labels:         p.Labels,
			ServiceCluster: p.ServiceCluster,
			MeshID:         p.MeshID,
			ClusterID:      p.ClusterID,
			IstioVersion:   p.IstioVersion,
			ProxyConfig:    p.ProxyConfig,
		}
	}
	// A host whose service exists but lacks the provider's port has no
	// cluster either: the second pass treats it as unknown.
	missing := map[string]bool{}
	in.Services = func(host string) []string {
		if missing[host] {
			return nil
		}
		if svc := push.ServiceForHost(host); svc != nil {
			return []string{svc.Namespace}
		}
		return nil
	}
	r := Build(in)
	var extra []string
	for _, c := range r.Clusters {
		if c.Bootstrap {
			continue
		}
		if svc := push.ServiceForHost(c.Host); svc != nil {
			if _, ok := svc.Port(c.Port); !ok {
				missing[c.Host] = true
				extra = append(extra, fmt.Sprintf("provider %v: service %s has no port %d (no cluster %s); not used", c.Providers, c.Host, c.Port, c.Name))
			}
		}
	}
	if len(extra) > 0 {
		r = Build(in)
		// The second pass reports the port's hosts as not found: the
		// first pass's reason stands instead.
		kept := extra
		for _, msg := range r.Problems {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(missing)), func(h string) bool {
				return strings.Contains(msg, "could not find service "+h+" ")
			}) {
				kept = append(kept, msg)
			}
		}
		slices.Sort(kept)
		r.Problems = kept
	}
	return r
}

// Telemetries reads the push's Telemetry objects for Build.
func Telemetries(cfgs []config.Config) []Telemetry {
	out := make([]Telemetry, 0, len(cfgs))
	for _, c := range cfgs {
		spec, ok := c.Spec.(*telemetryv1.Telemetry)
		if !ok {
			continue
		}
		out = append(out, Telemetry{Name: c.Name, Namespace: c.Namespace, CreationTime: c.CreationTimestamp, Spec: spec})
	}
	return out
}

// Gateway is r as the listener translator reads it.
func (r Result) Gateway() *model.GatewayTelemetry {
	return &model.GatewayTelemetry{
		HTTPAccessLogs:     r.HTTPAccessLogs,
		TCPAccessLogs:      r.TCPAccessLogs,
		ListenerAccessLogs: r.ListenerAccessLogs,
		Tracing:            r.Tracing,
		RequestIDExtension: r.RequestIDExtension,
		Problems:           r.Problems,
	}
}

func msgs[M proto.Message](in []M) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}

// Key names what r puts on the listeners: two results with one key give
// byte-identical listeners, so proxies whose telemetry has one key can
// share a gateway group's translation.
func Key(t *model.GatewayTelemetry) string {
	h := sha256.New()
	opts := proto.MarshalOptions{Deterministic: true}
	write := func(m proto.Message) {
		b, _ := opts.Marshal(m) // a built message always encodes
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	for _, logs := range [][]proto.Message{msgs(t.HTTPAccessLogs), msgs(t.TCPAccessLogs), msgs(t.ListenerAccessLogs)} {
		fmt.Fprintf(h, "[%d", len(logs))
		for _, m := range logs {
			write(m)
		}
	}
	if t.Tracing != nil {
		h.Write([]byte("t"))
		write(t.Tracing)
	}
	if t.RequestIDExtension != nil {
		h.Write([]byte("r"))
		write(t.RequestIDExtension)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
