package load

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
)

// Field numbers of envoy.service.discovery.v3.DiscoveryRequest.
const (
	reqVersionField = 1
	reqNodeField    = 2
	reqNamesField   = 3
	reqTypeURLField = 4
	reqNonceField   = 5
	reqErrorField   = 6
)

// encodeNames is the resource_names field of a request naming names, in
// wire form. A gateway's EDS list names every cluster and is repeated in
// every ACK, so it is encoded once per distinct list (parseMarked) rather
// than marshaled again per request: at 1,000 services x 500 gateways that
// marshaling was a quarter of the load tool's CPU under endpoint churn.
func encodeNames(names []string) []byte {
	n := 0
	for _, s := range names {
		n += protowire.SizeTag(reqNamesField) + protowire.SizeBytes(len(s))
	}
	b := make([]byte, 0, n)
	for _, s := range names {
		b = protowire.AppendTag(b, reqNamesField, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

// sotwRequest is a DiscoveryRequest in wire form, byte for byte what a
// deterministic marshal gives, around names already encoded by encodeNames.
func sotwRequest(node *corev3.Node, version string, names []byte, typeURL, nonce string, nack *statuspb.Status) (*xdswire.Pieces, error) {
	head := appendStringField(nil, reqVersionField, version)
	var err error
	if node != nil {
		if head, err = appendMessageField(head, reqNodeField, node); err != nil {
			return nil, err
		}
	}
	tail := appendStringField(nil, reqTypeURLField, typeURL)
	tail = appendStringField(tail, reqNonceField, nonce)
	if nack != nil {
		if tail, err = appendMessageField(tail, reqErrorField, nack); err != nil {
			return nil, err
		}
	}
	return &xdswire.Pieces{Parts: [][]byte{head, names, tail}}, nil
}

// appendMessageField appends a message field, deterministically marshaled.
func appendMessageField(b []byte, num protowire.Number, m proto.Message) ([]byte, error) {
	v, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v), nil
}

// appendStringField appends a proto3 string field; an empty string is
// left out, as proto3 does.
func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}
