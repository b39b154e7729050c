package envoyfilter

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// patchCluster applies a MERGE or REMOVE to c (a clone it may change), as
// istiod's ApplyClusterMerge.
func patchCluster(p *patch, c *clusterv3.Cluster) (matched, removed bool, err error) {
	if !clusterMatch(c, p) {
		return false, false, nil
	}
	if p.operation == networking.EnvoyFilter_Patch_REMOVE {
		return true, true, nil
	}
	v := p.value.(*clusterv3.Cluster)
	if v.GetTransportSocket() == nil {
		mergeProto(c, v)
		return true, false, nil
	}
	return true, false, mergeClusterTransportSocket(c, v)
}

// mergeClusterTransportSocket is istiod's mergeTransportSocketCluster: a
// transport socket of the same name (in transport_socket_matches or
// transport_socket) is merged at the typed-config level, a patch socket no
// match has is dropped when the cluster uses matches (both would be
// invalid), else it replaces the cluster's.
func mergeClusterTransportSocket(c, v *clusterv3.Cluster) error {
	var ts *corev3.TransportSocket
	if len(c.GetTransportSocketMatches()) > 0 {
		for _, tsm := range c.GetTransportSocketMatches() {
			if tsm.GetTransportSocket() != nil && tsm.GetTransportSocket().GetName() == v.GetTransportSocket().GetName() {
				ts = tsm.GetTransportSocket()
				break
			}
		}
		if ts == nil {
			return nil
		}
	} else if c.GetTransportSocket().GetName() == v.GetTransportSocket().GetName() && c.GetTransportSocket() != nil {
		ts = c.GetTransportSocket()
	}
	if ts == nil {
		c.TransportSocket = proto.Clone(v.GetTransportSocket()).(*corev3.TransportSocket)
		return nil
	}
	dst, src := ts.GetTypedConfig(), v.GetTransportSocket().GetTypedConfig()
	if dst != nil && src != nil {
		merged, err := mergeAny(dst, src)
		if err != nil {
			return err
		}
		ts.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: merged}
	}
	return nil
}

// clusterMatch is istiod's: the name, or the service, port and subset of
// an "outbound|PORT|SUBSET|HOST" name.
func clusterMatch(c *clusterv3.Cluster, p *patch) bool {
	m := p.match.GetCluster()
	if m == nil {
		return true
	}
	if m.GetName() != "" {
		return m.GetName() == c.GetName()
	}
	port, subset, host, _ := model.ParseClusterName(c.GetName())
	if m.GetSubset() != "" && m.GetSubset() != subset {
		return false
	}
	if m.GetService() != "" && m.GetService() != host {
		return false
	}
	if m.GetPortNumber() != 0 && m.GetPortNumber() != port {
		return false
	}
	return true
}
