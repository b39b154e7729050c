// Package xdswire is the wire layer shared by the load tool and the floor
// server: a gRPC codec that sends pre-serialized messages as they are and
// hands received bytes to a decoder without building the protos, and a
// shallow reader of DiscoveryResponse framing.
//
// Both tools exist to measure a control plane, so neither may spend its CPU
// building and discarding megabytes of protos: the floor writes the same
// bytes to every stream, and the load tool reads only the fields it needs
// and parses each distinct set of resources once.
package xdswire

import (
	"fmt"
	"math/bits"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Frame is a message already in wire form; Codec sends its bytes as they are.
type Frame struct{ Bytes []byte }

// Pieces is a message already in wire form, in parts that Codec sends one
// after the other without joining them: a part shared by many messages
// (a gateway's list of EDS names) is encoded once and sent as it is.
type Pieces struct{ Parts [][]byte }

// Decoder is implemented by messages that read their own wire form. The
// bytes are valid only during the call.
type Decoder interface{ DecodeWire(b []byte) error }

// Codec is a gRPC CodecV2 named "proto", so peers see ordinary protobuf:
// Frames and proto messages are marshaled, Decoders and proto messages are
// unmarshaled.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// Name is "proto": the content subtype on the wire does not change.
func (Codec) Name() string { return "proto" }

// Marshal sends a Frame's or Pieces' bytes without copying, or marshals a
// proto.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *Frame:
		return mem.BufferSlice{mem.SliceBuffer(m.Bytes)}, nil
	case *Pieces:
		out := make(mem.BufferSlice, 0, len(m.Parts))
		for _, p := range m.Parts {
			if len(p) > 0 {
				out = append(out, mem.SliceBuffer(p))
			}
		}
		return out, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return nil, fmt.Errorf("xdswire: cannot marshal %T", v)
}

// Unmarshal hands the bytes to a Decoder or unmarshals a proto.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		b = getContiguous(data.Len())
		defer putContiguous(b)
		data.CopyTo(b)
	}
	switch m := v.(type) {
	case Decoder:
		return m.DecodeWire(b)
	case proto.Message:
		return proto.Unmarshal(b, m)
	}
	return fmt.Errorf("xdswire: cannot unmarshal into %T", v)
}

// contiguous keeps a few buffers for joining a received message's pieces.
// A gateway's responses are megabytes; gRPC's pool gives large buffers
// back to the garbage collector, and a fresh one every time costs a page
// fault per 4 KiB written (most of the load tool's CPU at 5,000 services).
// Decoding is short, so a handful of buffers serve every stream.
var contiguous = make(chan []byte, 8)

func getContiguous(n int) []byte {
	select {
	case b := <-contiguous:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	// Rounded up to a power of two, so buffers soon fit every type's
	// responses instead of being dropped and allocated again.
	return make([]byte, n, 1<<bits.Len(uint(n)))
}

func putContiguous(b []byte) {
	select {
	case contiguous <- b:
	default:
	}
}
