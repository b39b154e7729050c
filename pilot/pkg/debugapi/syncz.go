package debugapi

import (
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// Syncz is the body of /debug/syncz.
type Syncz struct {
	Proxies []SyncProxy `json:"proxies"`
}

// SyncProxy is one proxy's protocol state. With several streams for one
// node id, Types shows the newest stream, the one Envoy is using.
type SyncProxy struct {
	ID           string `json:"id"`
	GatewayGroup string `json:"gatewayGroup"`
	Stream       int64  `json:"stream"`
	// Delta is set when the stream is delta (incremental) xDS.
	Delta bool       `json:"delta,omitempty"`
	Types []SyncType `json:"types"`
	// SecretsRefused are the SDS secrets the proxy's gateways reference
	// that it is not sent, and why; the filter chains needing them are
	// left out of its listeners.
	SecretsRefused []model.SecretRefusal `json:"secretsRefused,omitempty"`
}

// SyncType is one xDS type on one stream. Status is SYNCED (the proxy ACKed
// the version sent), SENT (sent, no answer yet), NACKED (the proxy rejected
// the version sent and keeps its previous one), or NOT_SENT. Versions are
// the type's version in the proxy's view (delta responses carry it as
// system_version_info). Stale is set when the view has a newer version than
// was sent and the proxy has not asked again since (a proxy waiting on an
// open request holds everything it asked for: with named requests the
// view's version may move on without concerning it).
type SyncType struct {
	Type            string    `json:"type"`
	TypeURL         string    `json:"typeUrl"`
	Status          string    `json:"status"`
	SnapshotVersion string    `json:"snapshotVersion,omitempty"`
	SentVersion     string    `json:"sentVersion,omitempty"`
	SentNonce       string    `json:"sentNonce,omitempty"`
	SentAt          time.Time `json:"sentAt,omitzero"`
	Sends           int       `json:"sends"`
	AckedVersion    string    `json:"ackedVersion,omitempty"`
	AckedAt         time.Time `json:"ackedAt,omitzero"`
	Stale           bool      `json:"stale,omitempty"`
	LastNack        *SyncNack `json:"lastNack,omitempty"`
}

// SyncNack is the last rejection of a type. Version is empty when the
// rejected response was older than the last one sent.
type SyncNack struct {
	Version string    `json:"version,omitempty"`
	Nonce   string    `json:"nonce"`
	Code    int32     `json:"code,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
	// EnvoyFilterPatches are the EnvoyFilter patches that changed
	// resources of the rejected type for this proxy ("EnvoyFilter ns/name
	// spec.configPatches[i] on Listener NAME"): the likely cause.
	EnvoyFilterPatches []string `json:"envoyFilterPatches,omitempty"`
}

// Adsz is the body of /debug/adsz.
type Adsz struct {
	TotalProxies int         `json:"totalProxies"`
	Proxies      []AdszProxy `json:"proxies"`
}

// AdszProxy is one connected proxy.
type AdszProxy struct {
	ID        string            `json:"id"`
	Type      string            `json:"type"`
	IP        string            `json:"ip"`
	Pod       string            `json:"pod"`
	Namespace string            `json:"namespace"`
	ClusterID string            `json:"clusterId,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Identity is what the proxy proved on the secure port
	// ("ns/NAMESPACE/sa/NAME (token|certificate)"), empty on the
	// plaintext port.
	Identity    string    `json:"identity,omitempty"`
	ConnectedAt time.Time `json:"connectedAt"`
	// GatewayGroup is the key of the proxy's gateway configuration (empty
	// for a proxy no Gateway selects, or before the first push); Gateways
	// are its Gateways as "namespace/name".
	GatewayGroup string       `json:"gatewayGroup"`
	Gateways     []string     `json:"gateways"`
	Streams      []AdszStream `json:"streams"`
	// Telemetry is the access logging and tracing decision in force for
	// the proxy's listeners (nil before its first push, and for
	// proxyless clients).
	Telemetry *AdszTelemetry `json:"telemetry,omitempty"`
	// Policies are the RequestAuthentications and AuthorizationPolicies
	// applied to its listeners ("Kind namespace/name"), and
	// PolicyProblems what could not be served of them.
	Policies       []string `json:"policies,omitempty"`
	PolicyProblems []string `json:"policyProblems,omitempty"`
}

// AdszTelemetry is a proxy's merged Telemetry API decision and what the
// translator left out of it.
type AdszTelemetry struct {
	model.TelemetryDecision
	Problems []string `json:"problems,omitempty"`
}

// AdszStream is one ADS stream of a proxy.
type AdszStream struct {
	ID       int64     `json:"id"`
	Delta    bool      `json:"delta,omitempty"`
	Peer     string    `json:"peer,omitempty"`
	OpenedAt time.Time `json:"openedAt"`
}
