package model

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// ProxyConfigMetadata is the node metadata key istio-agent sends the
// proxy's ProxyConfig under: a JSON object (mesh defaultConfig with the
// pod's proxy.istio.io/config annotation merged over it).
const ProxyConfigMetadata = "PROXY_CONFIG"

// GatewayTopology is what a gateway's ProxyConfig says about the network
// in front of it (meshconfig.Topology), reduced to what changes its
// listeners. The zero value is istiod's default for a gateway without
// one: no trusted hops, client certificate details SANITIZE_SET, no
// PROXY protocol.
type GatewayTopology struct {
	// NumTrustedProxies is the HTTP connection manager's
	// xff_num_trusted_hops: how many X-Forwarded-For entries, counted
	// from the right, were added by proxies in front of the gateway.
	NumTrustedProxies uint32
	// ForwardClientCertDetails is how x-forwarded-client-cert is
	// handled; UNDEFINED stands for istiod's gateway default,
	// SANITIZE_SET (GatewayTopologyOf maps SANITIZE_SET to it, so both
	// spellings share one key).
	ForwardClientCertDetails meshconfig.ForwardClientCertDetails
	// ProxyProtocol puts the PROXY protocol listener filter first on
	// every listener: the load balancer in front sends the client
	// address in a PROXY header.
	ProxyProtocol bool
}

// GatewayTopologyOf reads the topology of a ProxyConfig (nil for none), as
// istiod's gateway listener builder reads GatewayTopology.
func GatewayTopologyOf(pc *meshconfig.ProxyConfig) GatewayTopology {
	gt := pc.GetGatewayTopology()
	if gt == nil {
		return GatewayTopology{}
	}
	t := GatewayTopology{
		NumTrustedProxies:        gt.GetNumTrustedProxies(),
		ForwardClientCertDetails: gt.GetForwardClientCertDetails(),
		ProxyProtocol:            gt.GetProxyProtocol() != nil,
	}
	if t.ForwardClientCertDetails == meshconfig.ForwardClientCertDetails_SANITIZE_SET {
		t.ForwardClientCertDetails = meshconfig.ForwardClientCertDetails_UNDEFINED
	}
	return t
}

// Key is "" for the default topology and otherwise names every field, so
// two proxies whose listeners differ by topology never share a gateway
// group, and two with the same topology do.
func (t GatewayTopology) Key() string {
	if t == (GatewayTopology{}) {
		return ""
	}
	var b strings.Builder
	b.WriteString("xff=" + strconv.FormatUint(uint64(t.NumTrustedProxies), 10))
	if t.ForwardClientCertDetails != meshconfig.ForwardClientCertDetails_UNDEFINED {
		b.WriteString(",xfcc=" + t.ForwardClientCertDetails.String())
	}
	if t.ProxyProtocol {
		b.WriteString(",proxy-protocol")
	}
	return b.String()
}

// ProxyConfigOrDefault is the ProxyConfig the proxy's listeners are built
// with: its own PROXY_CONFIG when it sent one, whole, else def (the mesh
// config's defaultConfig), as istiod's NodeMetadata.ProxyConfigOrDefault.
// istio-agent already merged the mesh defaults into what it sends, so the
// two are not merged again.
func (p *Proxy) ProxyConfigOrDefault(def *meshconfig.ProxyConfig) *meshconfig.ProxyConfig {
	if p != nil && p.ProxyConfig != nil {
		return p.ProxyConfig
	}
	return def
}

// GatewayTopologyFor is the topology p's listeners are built with: that
// of its PROXY_CONFIG when it sent one, else that of the mesh config's
// defaultConfig (istiod's buildGatewayListeners reads
// ProxyConfigOrDefault(push.Mesh.DefaultConfig)).
func (ps *PushContext) GatewayTopologyFor(p *Proxy) GatewayTopology {
	return GatewayTopologyOf(p.ProxyConfigOrDefault(ps.Mesh().Mesh.GetDefaultConfig()))
}

// GatewayTopology is the topology the listeners of ps are built with
// (WithGatewayTopology); the default one unless set.
func (ps *PushContext) GatewayTopology() GatewayTopology {
	if ps == nil {
		return GatewayTopology{}
	}
	return ps.topology
}

// WithGatewayTopology returns ps building listeners for proxies of
// topology t, sharing every index and the view of ps. The topology is
// part of the gateway group key (GatewayTopology.Key): the caller keys
// the translation by it.
func (ps *PushContext) WithGatewayTopology(t GatewayTopology) *PushContext {
	if ps.topology == t {
		return ps
	}
	next := *ps
	next.base = ps.Base()
	next.topology = t
	return &next
}

// parseProxyConfig reads the PROXY_CONFIG node metadata: a JSON object
// (how istio-agent's bootstrap writes it) or a string holding one. Fields
// ProxyConfig does not know are ignored, as istiod ignores them.
func parseProxyConfig(v *structpb.Value) (*meshconfig.ProxyConfig, error) {
	var data []byte
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		b, err := protojson.Marshal(k.StructValue)
		if err != nil {
			return nil, err
		}
		data = b
	case *structpb.Value_StringValue:
		data = []byte(k.StringValue)
	default:
		return nil, fmt.Errorf("want a JSON object (a ProxyConfig), got %T", v.GetKind())
	}
	pc := &meshconfig.ProxyConfig{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, pc); err != nil {
		return nil, err
	}
	return pc, nil
}
