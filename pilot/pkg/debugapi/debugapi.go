package debugapi

import "github.com/wayfinder-dev/wayfinder/pkg/version"

// Error is the body of a debug endpoint's error response.
type Error struct {
	Error string `json:"error"`
}

// List is the body of /debug/list.
type List struct {
	Endpoints []Endpoint `json:"endpoints"`
}

// Endpoint describes one endpoint in /debug/list.
type Endpoint struct {
	Path        string `json:"path"`
	Description string `json:"description"`
}

// VersionInfo is the body of /debug/version: the build, and which replica
// answered (its pod name in Kubernetes mode), so that a client talking to
// several replicas can say which one serves a proxy.
type VersionInfo struct {
	version.Info
	Replica string `json:"replica,omitempty"`
}
