package xds

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
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
}

func (s *DiscoveryServer) handleSyncz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.syncz(security.ViewerFrom(r.Context())))
}

// syncz shows the proxies v may see (all for a nil viewer).
func (s *DiscoveryServer) syncz(v *security.Viewer) Syncz {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Syncz{Proxies: []SyncProxy{}}
	for _, id := range slices.Sorted(maps.Keys(s.proxies)) {
		p := s.proxies[id]
		if !v.SeesNamespace(p.proxy.Namespace) {
			continue
		}
		sp := SyncProxy{ID: id, Types: []SyncType{}}
		if p.group != nil {
			sp.GatewayGroup = p.group.key
			sp.SecretsRefused = p.group.refused
		}
		var st *streamState
		for _, sid := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
			if st == nil || !p.streams[sid].openedAt.Before(st.openedAt) {
				st = p.streams[sid] // newest wins
			}
		}
		sp.Stream, sp.Delta = st.key.id, st.key.delta
		urls := slices.Collect(maps.Keys(st.types))
		for i, t := range servedTypes {
			// Show types not requested yet as NOT_SENT: every Envoy
			// type, and secrets when the view has some.
			if !slices.Contains(urls, t) && p.view != nil && (slices.Contains(coreTypes, t) || len(p.view.sets[i].items) > 0) {
				urls = append(urls, t)
			}
		}
		slices.SortFunc(urls, compareTypeURL)
		for _, u := range urls {
			sp.Types = append(sp.Types, syncType(u, st.types[u], p))
		}
		out.Proxies = append(out.Proxies, sp)
	}
	return out
}

// compareTypeURL orders the served types as ADS sends them, others after.
func compareTypeURL(a, b string) int {
	ia, ib := slices.Index(servedTypes, a), slices.Index(servedTypes, b)
	if ia < 0 {
		ia = len(servedTypes)
	}
	if ib < 0 {
		ib = len(servedTypes)
	}
	return cmp.Or(cmp.Compare(ia, ib), strings.Compare(a, b))
}

func syncType(typeURL string, ts *typeStatus, p *proxyState) SyncType {
	out := SyncType{Type: shortType(typeURL), TypeURL: typeURL, Status: "NOT_SENT"}
	if p.view != nil {
		out.SnapshotVersion = p.view.set(typeURL).version
	}
	if ts == nil {
		return out
	}
	out.SentVersion, out.SentNonce, out.SentAt, out.Sends = ts.sentVersion, ts.sentNonce, ts.sentAt, ts.sends
	out.AckedVersion, out.AckedAt = ts.ackedVersion, ts.ackedAt
	if n := ts.lastNack; n != nil {
		out.LastNack = &SyncNack{Version: n.version, Nonce: n.nonce, Code: n.code, Message: n.message, At: n.at}
	}
	switch {
	case ts.sends == 0:
	case ts.nackedNonce != "" && ts.nackedNonce == ts.sentNonce:
		out.Status = "NACKED"
	case ts.ackedVersion == ts.sentVersion:
		out.Status = "SYNCED"
	default:
		out.Status = "SENT"
	}
	out.Stale = ts.sends > 0 && ts.watch == nil && out.SnapshotVersion != "" && out.SnapshotVersion != ts.sentVersion
	return out
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
}

// AdszStream is one ADS stream of a proxy.
type AdszStream struct {
	ID       int64     `json:"id"`
	Delta    bool      `json:"delta,omitempty"`
	Peer     string    `json:"peer,omitempty"`
	OpenedAt time.Time `json:"openedAt"`
}

func (s *DiscoveryServer) handleAdsz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.adsz(security.ViewerFrom(r.Context())))
}

// adsz shows the proxies v may see (all for a nil viewer).
func (s *DiscoveryServer) adsz(v *security.Viewer) Adsz {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Adsz{Proxies: []AdszProxy{}}
	for _, id := range slices.Sorted(maps.Keys(s.proxies)) {
		p := s.proxies[id]
		if !v.SeesNamespace(p.proxy.Namespace) {
			continue
		}
		ap := AdszProxy{
			ID: id, Type: string(p.proxy.Type), IP: p.proxy.IPAddress, Pod: p.proxy.PodName, Namespace: p.proxy.Namespace,
			ClusterID: p.proxy.ClusterID, Labels: p.proxy.Labels, ConnectedAt: p.connectedAt,
			Gateways: []string{}, Streams: []AdszStream{},
		}
		if p.proxy.Identity != nil {
			ap.Identity = p.proxy.Identity.String()
		}
		if p.group != nil {
			ap.GatewayGroup = p.group.key
			ap.Gateways = gatewayNames(p.group.gateways)
		}
		for _, sid := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
			st := p.streams[sid]
			ap.Streams = append(ap.Streams, AdszStream{ID: sid.id, Delta: sid.delta, Peer: st.peer, OpenedAt: st.openedAt})
		}
		out.Proxies = append(out.Proxies, ap)
	}
	out.TotalProxies = len(out.Proxies)
	return out
}

func gatewayNames(keys []config.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Namespace + "/" + k.Name
	}
	return out
}
