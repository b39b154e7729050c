package model

import (
	"fmt"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// NodeType is the first field of Istio's node id.
type NodeType string

const (
	Router    NodeType = "router"
	Sidecar   NodeType = "sidecar"
	Proxyless NodeType = "proxyless"
)

// Proxy is a connected client identified the way istiod identifies it:
// node id "TYPE~IP~POD.NAMESPACE~NAMESPACE.svc.cluster.local" and node
// metadata LABELS, NAMESPACE and CLUSTER_ID.
type Proxy struct {
	ID        string
	Type      NodeType
	IPAddress string
	// PodName and Namespace come from the "POD.NAMESPACE" field of the id;
	// the NAMESPACE metadata wins when both are present.
	PodName   string
	Namespace string
	DNSDomain string
	Labels    map[string]string
	ClusterID string
	// Generator is the GENERATOR metadata ("grpc" for proxyless gRPC).
	Generator string
	// ProxyConfig is the PROXY_CONFIG metadata istio-agent sends (the
	// pod's ProxyConfig); nil when the node sent none, and the mesh
	// config's defaultConfig applies (ProxyConfigOrDefault).
	ProxyConfig *meshconfig.ProxyConfig
	// ServiceCluster is the node's cluster (Envoy's --service-cluster),
	// MeshID and IstioVersion the MESH_ID and ISTIO_VERSION metadata: the
	// service name and span tags istiod's tracers report.
	ServiceCluster string
	MeshID         string
	IstioVersion   string
	// Identity is what the client proved on an authenticated port; nil
	// on the plaintext port. Secrets are only ever sent to a proxy with an
	// Identity (see the secure ADS port).
	Identity *Identity
}

// ParseProxy reads a node's identity. An id that is not in Istio's form is
// an error that names the id.
func ParseProxy(node *core.Node) (*Proxy, error) {
	if node == nil || node.GetId() == "" {
		return nil, fmt.Errorf("node id is empty: want TYPE~IP~POD.NAMESPACE~NAMESPACE.svc.cluster.local")
	}
	parts := strings.Split(node.GetId(), "~")
	if len(parts) != 4 {
		return nil, fmt.Errorf("node id %q: want 4 parts separated by '~' (TYPE~IP~POD.NAMESPACE~DOMAIN), got %d", node.GetId(), len(parts))
	}
	p := &Proxy{ID: node.GetId(), Type: NodeType(parts[0]), IPAddress: parts[1], DNSDomain: parts[3]}
	switch p.Type {
	case Router, Sidecar, Proxyless:
	default:
		return nil, fmt.Errorf("node id %q: type %q is not one of router, sidecar, proxyless", node.GetId(), parts[0])
	}
	if pod, ns, ok := strings.Cut(parts[2], "."); ok {
		p.PodName, p.Namespace = pod, ns
	} else {
		p.PodName = parts[2]
	}
	md := node.GetMetadata().GetFields()
	if ns := md["NAMESPACE"].GetStringValue(); ns != "" {
		p.Namespace = ns
	}
	p.ClusterID = md["CLUSTER_ID"].GetStringValue()
	p.Generator = md["GENERATOR"].GetStringValue()
	p.ServiceCluster = node.GetCluster()
	p.MeshID = md["MESH_ID"].GetStringValue()
	p.IstioVersion = md["ISTIO_VERSION"].GetStringValue()
	p.Labels = stringMap(md["LABELS"])
	if v, ok := md[ProxyConfigMetadata]; ok {
		pc, err := parseProxyConfig(v)
		if err != nil {
			return nil, fmt.Errorf("node id %q: metadata %s: %v", node.GetId(), ProxyConfigMetadata, err)
		}
		p.ProxyConfig = pc
	}
	if p.Namespace == "" {
		return nil, fmt.Errorf("node id %q: no namespace in POD.NAMESPACE and no NAMESPACE metadata", node.GetId())
	}
	return p, nil
}

func stringMap(v *structpb.Value) map[string]string {
	fields := v.GetStructValue().GetFields()
	if len(fields) == 0 {
		return nil
	}
	out := make(map[string]string, len(fields))
	for k, f := range fields {
		out[k] = f.GetStringValue()
	}
	return out
}
