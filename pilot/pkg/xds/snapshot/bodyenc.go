package snapshot

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// sharedPartMin is the size from which a resource's bytes go into a
// response as a part of their own, written from the Any the interner
// keeps, rather than copied into the response body. A gateway's route
// configuration (5 MB at 5,000 services) was kept twice: in its Any and in
// every response body carrying it.
const sharedPartMin = 16 << 10

// Field numbers written by hand below: DiscoveryResponse's version_info,
// resources and type_url; DeltaDiscoveryResponse's system_version_info,
// resources and type_url (the same numbers); Resource's version, resource
// and name; Any's type_url and value. Fields are written in number order,
// as the deterministic marshaling writes them, so the parts joined are
// byte for byte its output (a test holds them to it).
const (
	respVersionField  = 1
	respResourceField = 2
	respTypeField     = 4
	resVersionField   = 1
	resResourceField  = 2
	resNameField      = 3
	anyTypeField      = 1
	anyValueField     = 2
)

// partsBuilder gathers a body's parts: small fields are copied into one
// buffer, large values become parts of their own. It runs twice: first
// counting (n) what will be copied, then writing into a buffer of that
// size, whose stretches between shared values are the other parts.
type partsBuilder struct {
	counting bool
	n        int
	out      [][]byte
	buf      []byte
	mark     int // where the part being written starts in buf
}

func (p *partsBuilder) field(num protowire.Number, s string) {
	if s == "" {
		return // proto3 omits an empty string
	}
	if p.counting {
		p.n += protowire.SizeTag(num) + protowire.SizeBytes(len(s))
		return
	}
	p.buf = protowire.AppendTag(p.buf, num, protowire.BytesType)
	p.buf = protowire.AppendString(p.buf, s)
}

func (p *partsBuilder) header(num protowire.Number, size int) {
	if p.counting {
		p.n += protowire.SizeTag(num) + protowire.SizeVarint(uint64(size))
		return
	}
	p.buf = protowire.AppendTag(p.buf, num, protowire.BytesType)
	p.buf = protowire.AppendVarint(p.buf, uint64(size))
}

// value writes b, as a part of its own when large.
func (p *partsBuilder) value(b []byte) {
	switch {
	case len(b) >= sharedPartMin:
		p.flush()
		if !p.counting {
			p.out = append(p.out, b)
		}
	case p.counting:
		p.n += len(b)
	default:
		p.buf = append(p.buf, b...)
	}
}

func (p *partsBuilder) flush() {
	if !p.counting && len(p.buf) > p.mark {
		p.out = append(p.out, p.buf[p.mark:len(p.buf):len(p.buf)])
		p.mark = len(p.buf)
	}
}

// build runs write counting, then writing, and returns the parts.
func build(write func(p *partsBuilder) bool) ([][]byte, bool) {
	p := &partsBuilder{counting: true}
	if !write(p) {
		return nil, false
	}
	p = &partsBuilder{buf: make([]byte, 0, p.n)}
	if !write(p) {
		return nil, false
	}
	p.flush()
	return p.out, true
}

// anySize is the encoded size of a's two fields; when that is not
// proto.Size(a), a has more (unknown fields) and is not written by hand.
func anySize(a *anypb.Any) int {
	size := 0
	if a.GetTypeUrl() != "" {
		size += protowire.SizeTag(anyTypeField) + protowire.SizeBytes(len(a.GetTypeUrl()))
	}
	if len(a.GetValue()) > 0 {
		size += protowire.SizeTag(anyValueField) + protowire.SizeBytes(len(a.GetValue()))
	}
	return size
}

func (p *partsBuilder) any(a *anypb.Any) {
	p.field(anyTypeField, a.GetTypeUrl())
	if len(a.GetValue()) > 0 {
		p.header(anyValueField, len(a.GetValue()))
		p.value(a.GetValue())
	}
}

// sotwParts is the body of a SotW response in parts; ok is false when a
// resource is not a plain Any (marshal it as a whole then).
func sotwParts(version, typeURL string, anys []*anypb.Any) (parts [][]byte, ok bool) {
	return build(func(p *partsBuilder) bool {
		p.field(respVersionField, version)
		for _, a := range anys {
			size := anySize(a)
			if p.counting && proto.Size(a) != size {
				return false // checked once, on the counting pass
			}
			p.header(respResourceField, size)
			p.any(a)
		}
		p.field(respTypeField, typeURL)
		return true
	})
}

// deltaParts is DeltaBody's head (the fields before the nonce) in parts;
// ok is false when a resource has more than a version, a plain Any and a
// name.
func deltaParts(version, typeURL string, resources []*discovery.Resource) (parts [][]byte, ok bool) {
	return build(func(p *partsBuilder) bool {
		p.field(respVersionField, version)
		for _, r := range resources {
			size := 0
			if r.GetVersion() != "" {
				size += protowire.SizeTag(resVersionField) + protowire.SizeBytes(len(r.GetVersion()))
			}
			var anyLen int
			if r.GetResource() != nil {
				anyLen = anySize(r.GetResource())
				size += protowire.SizeTag(resResourceField) + protowire.SizeBytes(anyLen)
			}
			if r.GetName() != "" {
				size += protowire.SizeTag(resNameField) + protowire.SizeBytes(len(r.GetName()))
			}
			// A Resource with more than these fields, or whose Any has more
			// than its two, is bigger than size: checked once, on the
			// counting pass.
			if p.counting && proto.Size(r) != size {
				return false
			}
			p.header(respResourceField, size)
			p.field(resVersionField, r.GetVersion())
			if r.GetResource() != nil {
				p.header(resResourceField, anyLen)
				p.any(r.GetResource())
			}
			p.field(resNameField, r.GetName())
		}
		p.field(respTypeField, typeURL)
		return true
	})
}
