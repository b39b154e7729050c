package xds

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Syncz is /debug/syncz: the protocol state of the proxies v may see
// (all for a nil viewer).
func (s *DiscoveryServer) Syncz(v *security.Viewer) debugapi.Syncz {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := debugapi.Syncz{Proxies: []debugapi.SyncProxy{}}
	for _, id := range slices.Sorted(maps.Keys(s.proxies)) {
		p := s.proxies[id]
		if !v.SeesNamespace(p.proxy.Namespace) {
			continue
		}
		sp := debugapi.SyncProxy{ID: id, Types: []debugapi.SyncType{}}
		if p.group != nil {
			sp.GatewayGroup = p.group.Key
			sp.SecretsRefused = p.group.Refused
		}
		var st *streamState
		for _, sid := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
			if st == nil || !p.streams[sid].openedAt.Before(st.openedAt) {
				st = p.streams[sid] // newest wins
			}
		}
		sp.Stream, sp.Delta = st.key.id, st.key.delta
		urls := slices.Collect(maps.Keys(st.types))
		for i, t := range snapshot.Types {
			// Show types not requested yet as NOT_SENT: every Envoy
			// type, and secrets when the view has some.
			if !slices.Contains(urls, t) && p.view != nil && (slices.Contains(snapshot.CoreTypes, t) || len(p.view.Sets[i].Items) > 0) {
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
	ia, ib := slices.Index(snapshot.Types, a), slices.Index(snapshot.Types, b)
	if ia < 0 {
		ia = len(snapshot.Types)
	}
	if ib < 0 {
		ib = len(snapshot.Types)
	}
	return cmp.Or(cmp.Compare(ia, ib), strings.Compare(a, b))
}

func syncType(typeURL string, ts *typeStatus, p *proxyState) debugapi.SyncType {
	out := debugapi.SyncType{Type: snapshot.ShortType(typeURL), TypeURL: typeURL, Status: "NOT_SENT"}
	if p.view != nil {
		out.SnapshotVersion = p.view.Set(typeURL).Version
	}
	if ts == nil {
		return out
	}
	out.SentVersion, out.SentNonce, out.SentAt, out.Sends = ts.sentVersion, ts.sentNonce, ts.sentAt, ts.sends
	out.AckedVersion, out.AckedAt = ts.ackedVersion, ts.ackedAt
	if n := ts.lastNack; n != nil {
		out.LastNack = &debugapi.SyncNack{Version: n.version, Nonce: n.nonce, Code: n.code, Message: n.message, At: n.at,
			EnvoyFilterPatches: n.patches}
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

// Adsz is /debug/adsz: the proxies v may see (all for a nil viewer).
func (s *DiscoveryServer) Adsz(v *security.Viewer) debugapi.Adsz {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := debugapi.Adsz{Proxies: []debugapi.AdszProxy{}}
	for _, id := range slices.Sorted(maps.Keys(s.proxies)) {
		p := s.proxies[id]
		if !v.SeesNamespace(p.proxy.Namespace) {
			continue
		}
		ap := debugapi.AdszProxy{
			ID: id, Type: string(p.proxy.Type), IP: p.proxy.IPAddress, Pod: p.proxy.PodName, Namespace: p.proxy.Namespace,
			ClusterID: p.proxy.ClusterID, Labels: p.proxy.Labels, ConnectedAt: p.connectedAt,
			Gateways: []string{}, Streams: []debugapi.AdszStream{},
		}
		if p.proxy.Identity != nil {
			ap.Identity = p.proxy.Identity.String()
		}
		if p.group != nil {
			ap.GatewayGroup = p.group.Key
			ap.Gateways = gatewayNames(p.group.Gateways)
			for _, k := range p.group.Security.GetPolicies() {
				ap.Policies = append(ap.Policies, k.String())
			}
			for _, e := range p.group.Security.GetProblems() {
				ap.PolicyProblems = append(ap.PolicyProblems, e.Error())
			}
			if d := p.group.Telemetry.GetDecision(); d != nil {
				ap.Telemetry = &debugapi.AdszTelemetry{TelemetryDecision: *d}
				for _, e := range p.group.Telemetry.GetProblems() {
					ap.Telemetry.Problems = append(ap.Telemetry.Problems, e.Error())
				}
			}
		}
		for _, sid := range slices.SortedFunc(maps.Keys(p.streams), compareStreamKey) {
			st := p.streams[sid]
			ap.Streams = append(ap.Streams, debugapi.AdszStream{ID: sid.id, Delta: sid.delta, Peer: st.peer, OpenedAt: st.openedAt})
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
