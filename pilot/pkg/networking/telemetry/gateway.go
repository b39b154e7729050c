package telemetry

import (
	"os"

	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
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
	in.Services = func(host string) []string {
		if svc := push.ServiceForHost(host); svc != nil {
			return []string{svc.Namespace}
		}
		return nil
	}
	// A host whose service exists but lacks the provider's port has no
	// cluster either.
	in.HasPort = func(host string, port uint32) bool {
		svc := push.ServiceForHost(host)
		if svc == nil {
			return false
		}
		_, ok := svc.Port(port)
		return ok
	}
	r := Build(in)
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
		Telemetries:        r.Decision.Keys(),
		Decision:           &r.Decision,
	}
}

// Key names what r puts on the listeners: two results with one key give
// byte-identical listeners, so proxies whose telemetry has one key can
// share a gateway group's translation.
func Key(t *model.GatewayTelemetry) string {
	h := protoconv.NewHasher()
	protoconv.Messages(h, t.HTTPAccessLogs)
	protoconv.Messages(h, t.TCPAccessLogs)
	protoconv.Messages(h, t.ListenerAccessLogs)
	if t.Tracing != nil {
		h.String("tracing")
		h.Message(t.Tracing)
	}
	if t.RequestIDExtension != nil {
		h.String("request-id")
		h.Message(t.RequestIDExtension)
	}
	// The objects applied, so that a group's status attribution is its
	// own (two sets of Telemetries can produce the same listeners).
	for _, k := range t.Telemetries {
		h.String(k.String())
	}
	return h.Sum()
}
