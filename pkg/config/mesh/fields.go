package mesh

import (
	"slices"
	"strings"
)

// read lists the mesh config fields Wayfinder reads, as paths in the
// MeshConfig YAML. It is the one place that decides what is "read": a
// field the user sets that is neither one of these nor inside one is
// reported by Config.Ignored, so it can be logged once by name.
// docs/mesh-config.md says what each does in Wayfinder (a test checks it
// names them all).
//
// These are the fields istiod's gateway path reads for access logging,
// tracing, Telemetry lookup and client addresses: rootNamespace (where
// mesh-wide Telemetry lives), the mesh-wide access log (file, format,
// encoding), enableTracing, the extension providers a Telemetry names and
// the defaults used when it names none, and from defaultConfig (the
// ProxyConfig a gateway falls back to when its node sends none) the
// gateway topology (trusted proxies, client certificate details, PROXY
// protocol) and the tracer settings.
var read = []string{
	"rootNamespace",
	"accessLogFile",
	"accessLogFormat",
	"accessLogEncoding",
	"enableEnvoyAccessLogService",
	"disableEnvoyListenerLog",
	"enableTracing",
	"extensionProviders",
	"defaultProviders",
	"defaultConfig.gatewayTopology",
	"defaultConfig.tracing",
}

// ReadFields returns the paths of the mesh config fields Wayfinder reads
// ("defaultConfig.tracing"); every field inside one is read too.
func ReadFields() []string { return slices.Clone(read) }

// isRead reports whether path is a read field or lies inside one.
func isRead(path string) bool {
	for _, r := range read {
		if path == r || strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[") {
			return true
		}
	}
	return false
}

// holdsRead reports whether path is a message that contains read fields
// ("defaultConfig"), so its other fields are judged one by one.
func holdsRead(path string) bool {
	if path == "" {
		return true
	}
	for _, r := range read {
		if strings.HasPrefix(r, path+".") {
			return true
		}
	}
	return false
}

// parent is the path of the message holding the field at path.
func parent(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// ignored returns, sorted, the paths of set fields that Wayfinder does
// not read, each at the highest level: "outboundTrafficPolicy", not its
// "mode"; "defaultConfig.proxyMetadata", not "defaultConfig".
func ignored(set []string) []string {
	var out []string
	for _, p := range set {
		if isRead(p) || holdsRead(p) || !holdsRead(parent(p)) {
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
