package model

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// GatewayTelemetry is the access logging and tracing of one gateway
// group's listeners, as the telemetry translator
// (pilot/pkg/networking/telemetry) built it from the mesh config and the
// Telemetry objects for the group's proxies. The model only carries it:
// the server computes it per proxy, keys the gateway group by it, and the
// listener translator places it where istiod does. Its protos are shared:
// read only.
type GatewayTelemetry struct {
	// HTTPAccessLogs go on every HTTP connection manager, TCPAccessLogs
	// on every tcp_proxy, ListenerAccessLogs on every listener.
	HTTPAccessLogs     []*accesslogv3.AccessLog
	TCPAccessLogs      []*accesslogv3.AccessLog
	ListenerAccessLogs []*accesslogv3.AccessLog
	// Tracing and RequestIDExtension go on every HTTP connection manager;
	// nil: none.
	Tracing            *hcmv3.HttpConnectionManager_Tracing
	RequestIDExtension *hcmv3.RequestIDExtension
	// Problems say what the translator left out and why (a provider the
	// mesh config does not have, a provider service with no cluster),
	// against the Telemetry field or mesh config field responsible.
	Problems []*config.Error
	// Telemetries are the Telemetry objects that apply (root, namespace,
	// then selecting ones): the objects this group's listeners depend on,
	// for their status.
	Telemetries []config.Key
	// Decision is the merged view that produced the rest, for the debug
	// endpoints and the CLI.
	Decision *TelemetryDecision
}

// GatewayTelemetry is the telemetry the listeners of ps are built with
// (WithGatewayTelemetry); nil when none was set, and the listener
// translator then computes the mesh-wide one itself.
func (ps *PushContext) GatewayTelemetry() *GatewayTelemetry {
	if ps == nil {
		return nil
	}
	return ps.telemetry
}

// WithGatewayTelemetry returns ps building listeners with telemetry t,
// sharing every index and the view of ps. What t depends on (the proxy's
// namespace, labels, Gateway API gateway and PROXY_CONFIG) is part of the
// gateway group key: the caller keys the translation by it.
func (ps *PushContext) WithGatewayTelemetry(t *GatewayTelemetry) *PushContext {
	if ps.telemetry == t {
		return ps
	}
	next := *ps
	next.base = ps.Base()
	next.telemetry = t
	return &next
}

// GetHTTPAccessLogs and the other getters read t's fields; nil t has none.
func (t *GatewayTelemetry) GetHTTPAccessLogs() []*accesslogv3.AccessLog {
	if t == nil {
		return nil
	}
	return t.HTTPAccessLogs
}

func (t *GatewayTelemetry) GetTCPAccessLogs() []*accesslogv3.AccessLog {
	if t == nil {
		return nil
	}
	return t.TCPAccessLogs
}

func (t *GatewayTelemetry) GetListenerAccessLogs() []*accesslogv3.AccessLog {
	if t == nil {
		return nil
	}
	return t.ListenerAccessLogs
}

func (t *GatewayTelemetry) GetTracing() *hcmv3.HttpConnectionManager_Tracing {
	if t == nil {
		return nil
	}
	return t.Tracing
}

func (t *GatewayTelemetry) GetRequestIDExtension() *hcmv3.RequestIDExtension {
	if t == nil {
		return nil
	}
	return t.RequestIDExtension
}

func (t *GatewayTelemetry) GetProblems() []*config.Error {
	if t == nil {
		return nil
	}
	return t.Problems
}

// GetTelemetries reads t.Telemetries; nil t has none.
func (t *GatewayTelemetry) GetTelemetries() []config.Key {
	if t == nil {
		return nil
	}
	return t.Telemetries
}

// GetDecision reads t.Decision; nil t has none.
func (t *GatewayTelemetry) GetDecision() *TelemetryDecision {
	if t == nil {
		return nil
	}
	return t.Decision
}
