// Package protoconv packs the Envoy messages the translators generate into
// the Any fields that carry typed configs (filters, access loggers,
// tracers, API listeners), one way for every translator: deterministic
// bytes, so that equal input gives equal snapshot versions, and, where
// asked, validated first, because a message inside an Any is not checked
// by the validation of the resource around it.
package protoconv

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Validatable is every generated Envoy message.
type Validatable interface {
	proto.Message
	ValidateAll() error
}

// Any packs m deterministically.
func Any(m proto.Message) (*anypb.Any, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: b}, nil
}

// ValidatedAny validates m (ValidateAll) and packs it deterministically.
func ValidatedAny(m Validatable) (*anypb.Any, error) {
	if err := m.ValidateAll(); err != nil {
		return nil, err
	}
	return Any(m)
}
