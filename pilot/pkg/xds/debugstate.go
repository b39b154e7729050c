package xds

import (
	"bytes"
	"encoding/json"
	"fmt"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// The server's state as the debug endpoints (package debug) show it: each
// method takes what it needs under mu, briefly, and returns a copy the
// caller owns, every list sorted.
var _ debug.State = (*DiscoveryServer)(nil)

// Configz is /debug/configz without its sections: every config object in
// the store by kind (schema order), namespace and name, the config errors
// standing now, the secrets refused to connected proxies and the
// per-object status.
func (s *DiscoveryServer) Configz() (debugapi.Configz, error) {
	out := debugapi.Configz{Configs: []debugapi.ConfigzObject{}, Errors: []debugapi.ConfigzError{}}
	for _, kind := range schema.Kinds() {
		for _, c := range s.store.List(kind, "") {
			spec, err := specJSON(c.Spec)
			if err != nil {
				return debugapi.Configz{}, fmt.Errorf("%s: encoding spec: %v", c.Key(), err)
			}
			out.Configs = append(out.Configs, debugapi.ConfigzObject{
				Kind: kind.String(), Namespace: c.Namespace, Name: c.Name, Source: c.Source,
				ResourceVersion: c.ResourceVersion, Labels: c.Labels, Spec: spec,
			})
		}
	}
	src, tr := s.currentErrors()
	for _, e := range src {
		out.Errors = append(out.Errors, debugapi.NewConfigzError("source", e))
	}
	for _, e := range tr {
		out.Errors = append(out.Errors, debugapi.NewConfigzError("translation", e))
	}
	out.SecretRefusals = s.secretRefusals()
	out.Status = s.configzStatus()
	return out, nil
}

// specJSON renders a spec with protojson, compacted: protojson varies its
// whitespace on purpose, and the debug output must be stable.
func specJSON(m proto.Message) (json.RawMessage, error) {
	if m == nil {
		return json.RawMessage("null"), nil
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ProxyConfig is the view a connected proxy is being served, for
// /debug/config_dump; its dump is rendered only when asked for.
func (s *DiscoveryServer) ProxyConfig(id string) (debug.ProxyConfig, bool) {
	s.mu.Lock()
	p := s.proxies[id]
	var v *snapshot.View
	if p != nil {
		v = p.view // immutable once set; safe to read after unlock
	}
	s.mu.Unlock()
	if p == nil {
		return debug.ProxyConfig{}, false
	}
	out := debug.ProxyConfig{Namespace: p.proxy.Namespace} // p.proxy is immutable once connected
	if v != nil {
		out.Dump = func() (*admin.ConfigDump, error) { return debug.ConfigDump(v) }
		out.Unpatched = func() (*admin.ConfigDump, error) { return s.unpatchedDump(p.proxy) }
	}
	return out, true
}

// Readiness is /healthz/ready's answer: ready once synced and pushed once,
// not while draining for shutdown.
func (s *DiscoveryServer) Readiness() (ready bool, why string) {
	switch {
	case s.Draining():
		return false, "draining for shutdown"
	case s.Ready():
		return true, ""
	case !s.synced.Load():
		return false, "waiting for the config source to sync"
	default:
		return false, "waiting for the first push"
	}
}

// unpatchedDump translates proxy's gateway configuration without its
// EnvoyFilters (under the push lock, like a push) and renders it; nil
// when no EnvoyFilter applies to it.
func (s *DiscoveryServer) unpatchedDump(proxy *model.Proxy) (*admin.ConfigDump, error) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	g := s.tr.Unpatched(st, proxy)
	if g == nil {
		return nil, nil
	}
	if g.View == nil {
		return nil, fmt.Errorf("the configuration without EnvoyFilters could not be assembled: %v", g.Problems())
	}
	return debug.ConfigDump(g.View)
}
