// Package xds turns an EnvoyFilter patch value (a google.protobuf.Struct
// holding Envoy's JSON) into the Envoy message its applyTo names, as
// istiod's pkg/config/xds does. It registers Envoy's filter types so that
// "@type" in a value resolves. Sources (validation) and the translator
// (the patcher) share it.
package xds

import (
	"errors"
	"fmt"
	"regexp"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// TypedStruct type URLs: the "deprecated struct" form of a typed config,
// {"@type": TypedStruct, "type_url": ..., "value": {...}}, which Envoy
// converts itself (Istio's local rate limit task uses the udpa one).
const (
	UDPATypedStructType = "type.googleapis.com/udpa.type.v1.TypedStruct"
	XDSTypedStructType  = "type.googleapis.com/xds.type.v3.TypedStruct"
)

// NewMessage returns an empty message of the type a patch with applyTo
// carries, or an error for applyTo values that carry none Wayfinder knows.
func NewMessage(applyTo networking.EnvoyFilter_ApplyTo) (proto.Message, error) {
	switch applyTo {
	case networking.EnvoyFilter_CLUSTER:
		return &clusterv3.Cluster{}, nil
	case networking.EnvoyFilter_LISTENER:
		return &listenerv3.Listener{}, nil
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return &routev3.RouteConfiguration{}, nil
	case networking.EnvoyFilter_FILTER_CHAIN:
		return &listenerv3.FilterChain{}, nil
	case networking.EnvoyFilter_HTTP_FILTER:
		return &hcmv3.HttpFilter{}, nil
	case networking.EnvoyFilter_NETWORK_FILTER:
		return &listenerv3.Filter{}, nil
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return &routev3.VirtualHost{}, nil
	case networking.EnvoyFilter_HTTP_ROUTE:
		return &routev3.Route{}, nil
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return &corev3.TypedExtensionConfig{}, nil
	case networking.EnvoyFilter_LISTENER_FILTER:
		return &listenerv3.ListenerFilter{}, nil
	}
	return nil, fmt.Errorf("applyTo %s carries no value Wayfinder applies", applyTo)
}

// BuildXDSObjectFromStruct is istiod's function of that name: value
// decoded as the message applyTo names. A nil value (REMOVE) gives nil.
// strict rejects fields the message does not have; istiod's patcher is
// not strict (a value written for a newer Envoy still applies), its
// validation is.
func BuildXDSObjectFromStruct(applyTo networking.EnvoyFilter_ApplyTo, value *structpb.Struct, strict bool) (proto.Message, error) {
	if value == nil {
		return nil, nil
	}
	obj, err := NewMessage(applyTo)
	if err != nil {
		return nil, err
	}
	if err := StructToMessage(value, obj, strict); err != nil {
		return nil, err
	}
	return obj, nil
}

// StructToMessage decodes pbst's JSON into out, resolving "@type" in the
// global registry.
func StructToMessage(pbst *structpb.Struct, out proto.Message, strict bool) error {
	if pbst == nil {
		return errors.New("nil struct")
	}
	buf, err := protojson.Marshal(pbst)
	if err != nil {
		return err
	}
	// Durations in Go's notation ("500ms"), which istiod's decoder reads.
	if buf, err = manifest.NormalizeDurationsJSON(buf, out.ProtoReflect().Descriptor(), "value"); err != nil {
		return err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: !strict}).Unmarshal(buf, out); err != nil {
		return errors.New(CleanError(err))
	}
	return nil
}

// jsonPosition is protojson's "(line 1:60): ": a position in JSON that
// protojson itself wrote (with deliberately unstable spacing), which
// names nothing the user wrote.
var jsonPosition = regexp.MustCompile(`\(line \d+:\d+\):[\s\x{00a0}]*`)

// protoPrefix is protobuf-go's "proto: ", whose space it randomly makes a
// non-breaking one so that nobody matches on its messages.
var protoPrefix = regexp.MustCompile(`^proto:[\s\x{00a0}]*`)

// CleanError is err's message without protobuf-go's unstable decorations
// (its "proto: " prefix and JSON positions), so messages are deterministic.
func CleanError(err error) string {
	return jsonPosition.ReplaceAllString(protoPrefix.ReplaceAllString(err.Error(), ""), "")
}
