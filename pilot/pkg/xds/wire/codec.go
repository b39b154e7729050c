// Package wire lets the discovery server write a discovery response that
// was serialized once to every stream that carries it, instead of
// marshaling the same megabytes again for each stream.
//
// It replaces gRPC's "proto" codec (registered at init, so every gRPC
// server and client in the process uses it) with one that writes a *Frame
// as it is, without copying, and hands every other value to the codec it
// replaced, so nothing else changes. A Frame is a response's bytes without
// its nonce plus the nonce field: the nonce is the only part of a
// DiscoveryResponse or DeltaDiscoveryResponse that differs per stream, and
// it is field 5 of both.
package wire

import (
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"
)

// NonceField is the field number of nonce in DiscoveryResponse and
// DeltaDiscoveryResponse.
const NonceField = 5

// Frame is a discovery response in wire form: Head (its parts one after
// the other), then the nonce field (when Nonce is not empty), then Tail.
// Head and Tail are shared by every stream and must not change. When Head
// holds the fields numbered below 5 and Tail those above, the bytes are
// exactly what a deterministic proto marshal of the whole response gives.
// Head is in parts so that a large resource's bytes are written from where
// they are kept rather than copied into the response once more.
type Frame struct {
	Head  [][]byte
	Nonce string
	Tail  []byte
}

// Len is the size of the frame on the wire.
func (f *Frame) Len() int {
	n := len(f.Tail)
	for _, p := range f.Head {
		n += len(p)
	}
	if f.Nonce != "" {
		n += protowire.SizeTag(NonceField) + protowire.SizeBytes(len(f.Nonce))
	}
	return n
}

// Append appends the frame's bytes to b.
func (f *Frame) Append(b []byte) []byte {
	for _, p := range f.Head {
		b = append(b, p...)
	}
	b = appendNonce(b, f.Nonce)
	return append(b, f.Tail...)
}

func appendNonce(b []byte, nonce string) []byte {
	if nonce == "" {
		return b // proto3 omits an empty string
	}
	b = protowire.AppendTag(b, NonceField, protowire.BytesType)
	return protowire.AppendString(b, nonce)
}

// Codec is the "proto" codec: Frames are written as they are, everything
// else goes to Base.
type Codec struct{ Base encoding.CodecV2 }

var _ encoding.CodecV2 = Codec{}

func init() {
	base := encoding.GetCodecV2(proto.Name)
	if _, ok := base.(Codec); ok {
		return
	}
	encoding.RegisterCodecV2(Codec{Base: base})
}

// Name is "proto", so peers see ordinary protobuf.
func (Codec) Name() string { return proto.Name }

// Marshal writes a Frame's shared bytes without copying them; only the
// nonce field is new. Anything else is marshaled by Base.
func (c Codec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*Frame)
	if !ok {
		return c.Base.Marshal(v)
	}
	if f == nil {
		return nil, fmt.Errorf("wire: nil frame")
	}
	out := make(mem.BufferSlice, 0, len(f.Head)+2)
	for _, p := range f.Head {
		if len(p) > 0 {
			out = append(out, mem.SliceBuffer(p))
		}
	}
	if f.Nonce != "" {
		out = append(out, mem.SliceBuffer(appendNonce(nil, f.Nonce)))
	}
	if len(f.Tail) > 0 {
		out = append(out, mem.SliceBuffer(f.Tail))
	}
	return out, nil
}

// Unmarshal is Base's, but a (delta) discovery request with a long list of
// resource names shares the list with earlier requests that had the same
// (see nameLists).
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch v.(type) {
	case *discovery.DiscoveryRequest, *discovery.DeltaDiscoveryRequest:
		if data.Len() < minSharedNames*4 {
			break
		}
		m := v.(gproto.Message)
		if shared.unmarshalLast(data, m) {
			return nil
		}
		var b []byte
		if len(data) == 1 {
			b = data[0].ReadOnlyData()
		} else {
			buf := data.MaterializeToBuffer(requestPool)
			defer buf.Free()
			b = buf.ReadOnlyData()
		}
		if shared.unmarshalRequest(b, m) {
			return nil
		}
		// Decoded here as gRPC's codec would, from the bytes already joined.
		return gproto.Unmarshal(b, m)
	}
	return c.Base.Unmarshal(data, v)
}

// requestPool holds the buffers a long request's frames are joined in:
// powers of two from 4 KiB to 16 MiB. gRPC's default pool has nothing
// between 32 KiB and 1 MiB, so a gateway's 60 KB list of EDS names took a
// 1 MiB buffer; with 500 gateways ACKing at once, 39 MiB of the heap was
// those buffers (a heap profile at cold convergence, 1,000 x 500).
var requestPool = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24)
	if err != nil {
		panic(err)
	}
	return p
}()
