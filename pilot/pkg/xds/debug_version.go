package xds

import (
	"net/http"

	"github.com/wayfinder-dev/wayfinder/pkg/version"
)

// VersionInfo is the body of /debug/version: the build, and which replica
// answered (its pod name in Kubernetes mode), so that a client talking to
// several replicas can say which one serves a proxy.
type VersionInfo struct {
	version.Info
	Replica string `json:"replica,omitempty"`
}

func (s *DiscoveryServer) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, VersionInfo{Info: version.Get(), Replica: s.replica})
}
