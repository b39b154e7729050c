package load

import (
	"bytes"
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// A request sent in pieces is, byte for byte, the deterministic marshal of
// the same DiscoveryRequest, with or without each optional field.
func TestSotWRequestIsTheMarshaledRequest(t *testing.T) {
	node := &corev3.Node{Id: "router~10.0.0.1~gw-0.istio-system~istio-system.svc.cluster.local",
		Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{
			"NAMESPACE": structpb.NewStringValue("istio-system"), "CLUSTER_ID": structpb.NewStringValue("Kubernetes"),
		}}}
	var long []string
	for i := range 300 { // names of 1- and 2-byte lengths
		long = append(long, fmt.Sprintf("outbound|8080||svc-%d.default.svc.cluster.local%0*d", i, i%120, 0))
	}
	nack := &statuspb.Status{Code: 3, Message: "resource 0: invalid"}
	for _, c := range []struct {
		node           *corev3.Node
		version, nonce string
		names          []string
		nack           *statuspb.Status
	}{
		{node: node},
		{version: "v1", nonce: "n1", names: []string{"a", "b"}},
		{node: node, version: "v2", nonce: "n2", names: long},
		{version: "v2", nonce: "n3", names: long, nack: nack},
		{names: []string{""}},
	} {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&discoveryv3.DiscoveryRequest{
			VersionInfo: c.version, Node: c.node, ResourceNames: c.names,
			TypeUrl: resource.EndpointType, ResponseNonce: c.nonce, ErrorDetail: c.nack,
		})
		if err != nil {
			t.Fatal(err)
		}
		req, err := sotwRequest(c.node, c.version, encodeNames(c.names), resource.EndpointType, c.nonce, c.nack)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(req.Parts, nil); !bytes.Equal(got, want) {
			t.Errorf("version %q, %d names, node %v, nack %v: pieces differ from the marshaled request\n got %x\nwant %x",
				c.version, len(c.names), c.node != nil, c.nack != nil, got, want)
		}
	}
}

// The parse of a state-of-the-world response carries its references in
// wire form, ready for every ACK; delta has no use for them.
func TestParseEncodesReferencesOnce(t *testing.T) {
	cds := sotw(t, resource.ClusterType, "1", edsCluster("c1", "svc-b"), edsCluster("c2", "svc-a"), edsCluster("c3", "svc-b"))
	p := parse(resource.ClusterType, false, cds.Resources, true)
	if p.err != nil {
		t.Fatal(p.err)
	}
	if want := encodeNames([]string{"svc-a", "svc-b"}); !bytes.Equal(p.refsWire, want) {
		t.Errorf("refsWire %x, want %x", p.refsWire, want)
	}
	eds := sotw(t, resource.EndpointType, "1", assignment("svc-a", "10.0.0.1"))
	if p := parse(resource.EndpointType, false, eds.Resources, true); p.err != nil || len(p.refsWire) != 0 {
		t.Errorf("EDS response: err %v, references in wire form %x", p.err, p.refsWire)
	}
}
