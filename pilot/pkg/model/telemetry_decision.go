package model

import (
	"strings"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// TelemetryDecision is the merged Telemetry API view for one proxy, for the debug
// endpoints and the CLI.
type TelemetryDecision struct {
	// Root, Namespace and Workload name ("ns/name") the Telemetries that
	// apply at each level; Workload lists every selecting one, in order.
	Root      string   `json:"root,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Workload  []string `json:"workload,omitempty"`
	// AccessLogs are the access log providers in force, sorted by name;
	// nil when no Telemetry or default provider configures logging and
	// the mesh config's accessLogFile (MeshAccessLog) applies instead.
	AccessLogs    []TelemetryAccessLog `json:"accessLogs,omitempty"`
	MeshAccessLog bool                 `json:"meshAccessLog,omitempty"`
	// Tracing is the tracing in force for the gateway (istiod's client
	// spec); nil when no Telemetry or default provider configures it and
	// the mesh config's enableTracing applies instead (MeshTracing).
	Tracing     *TelemetryTracing `json:"tracing,omitempty"`
	MeshTracing bool              `json:"meshTracing,omitempty"`
}

// TelemetryAccessLog is one access log provider after the merge.
type TelemetryAccessLog struct {
	Provider string  `json:"provider"`
	Disabled bool    `json:"disabled,omitempty"`
	Filter   *string `json:"filter,omitempty"`
}

// TelemetryTracing is the tracing spec after the merge (istiod's
// TracingSpec).
type TelemetryTracing struct {
	Provider                     string            `json:"provider,omitempty"`
	Disabled                     bool              `json:"disabled,omitempty"`
	RandomSamplingPercentage     *float64          `json:"randomSamplingPercentage,omitempty"`
	CustomTags                   map[string]string `json:"customTags,omitempty"`
	UseRequestIDForTraceSampling bool              `json:"useRequestIDForTraceSampling"`
	EnableIstioTags              bool              `json:"enableIstioTags"`
}

// Keys are the Telemetry objects of d, root first, then namespace, then
// the selecting ones in order.
func (d *TelemetryDecision) Keys() []config.Key {
	var out []config.Key
	for _, n := range append([]string{d.Root, d.Namespace}, d.Workload...) {
		if ns, name, ok := strings.Cut(n, "/"); ok {
			out = append(out, config.Key{Kind: schema.Telemetry, Namespace: ns, Name: name})
		}
	}
	return out
}
