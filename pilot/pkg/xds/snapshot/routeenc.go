package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// vhostBytes keeps the deterministic encoding of each virtual host by
// pointer, so a route configuration is encoded by joining its virtual
// hosts' bytes and only new virtual hosts are marshaled. The route
// translator hands out the same virtual host for unchanged input (see
// route.Cache), so a change to one VirtualService encodes one virtual
// host instead of thousands. Generations turn with the interner's RDS
// generation.
type vhostBytes struct {
	mu        sync.Mutex
	cur, prev map[*routev3.VirtualHost]*vhostEnc
}

// vhostEnc is one virtual host's encoding and, once asked for, its
// validation result.
type vhostEnc struct {
	b         []byte
	validated bool
	err       error
}

func (v *vhostBytes) rotate() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.prev, v.cur = v.cur, make(map[*routev3.VirtualHost]*vhostEnc, len(v.cur))
}

// entry returns vh's kept encoding, and its bytes as they are now (adopt
// may move them), encoding vh when it is new.
func (v *vhostBytes) entry(vh *routev3.VirtualHost) (*vhostEnc, []byte, error) {
	v.mu.Lock()
	e, ok := v.cur[vh]
	if !ok {
		if e, ok = v.prev[vh]; ok {
			v.cur[vh] = e
		}
	}
	var b []byte
	if ok {
		b = e.b
	}
	v.mu.Unlock()
	if ok {
		return e, b, nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vh)
	if err != nil {
		return nil, nil, err
	}
	e = &vhostEnc{b: b}
	v.mu.Lock()
	if v.cur == nil {
		v.cur = map[*routev3.VirtualHost]*vhostEnc{}
	}
	v.cur[vh] = e
	v.mu.Unlock()
	return e, b, nil
}

// validate is rc.ValidateAll with each virtual host validated once: a
// route configuration's rules are its own fields' and each virtual
// host's, so this finds what ValidateAll finds (the first problem).
func (v *vhostBytes) validate(rc *routev3.RouteConfiguration) error {
	for i, vh := range rc.GetVirtualHosts() {
		e, _, err := v.entry(vh)
		if err != nil {
			return err
		}
		v.mu.Lock()
		if !e.validated {
			e.err, e.validated = vh.ValidateAll(), true
		}
		err = e.err
		v.mu.Unlock()
		if err != nil {
			return fmt.Errorf("invalid RouteConfiguration.VirtualHosts[%d]: embedded message failed validation | caused by: %w", i, err)
		}
	}
	return shell(rc, routeConfigVhostsField).ValidateAll()
}

// shell returns a route configuration sharing rc's field values but for
// the fields numbered in skip.
func shell(rc *routev3.RouteConfiguration, skip ...protoreflect.FieldNumber) *routev3.RouteConfiguration {
	out := &routev3.RouteConfiguration{}
	dst := out.ProtoReflect()
	rc.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		if !slices.Contains(skip, fd.Number()) {
			dst.Set(fd, val)
		}
		return true
	})
	dst.SetUnknown(rc.ProtoReflect().GetUnknown())
	return out
}

// Field numbers of RouteConfiguration that routeConfigEnc writes
// itself; they are the two lowest, so they come first in the
// deterministic encoding, as the marshaler orders fields by number.
const (
	routeConfigNameField   protoreflect.FieldNumber = 1
	routeConfigVhostsField protoreflect.FieldNumber = 2
)

// routeConfigEnc is a route configuration's deterministic encoding in
// parts: its name, its virtual hosts' kept encodings and the other fields'
// bytes. Joined (writeTo) they are byte for byte what
// proto.MarshalOptions{Deterministic: true} gives (a test holds it to
// that). The parts give the content hash without joining them, so a route
// configuration that did not change (5 MB at 5,000 services) is hashed and
// never copied, and one that did is copied once into a buffer of its size.
type routeConfigEnc struct {
	name string
	// vhosts are the virtual hosts' kept encodings and parts their bytes
	// as they were when this was made (adopt may move an entry's bytes).
	vhosts []*vhostEnc
	parts  [][]byte
	rest   []byte
	size   int
}

// encode returns rc's encoding in parts, with the virtual hosts'
// encodings taken from v.
func (v *vhostBytes) encode(rc *routev3.RouteConfiguration) (*routeConfigEnc, error) {
	n := len(rc.GetVirtualHosts())
	e := &routeConfigEnc{name: rc.GetName(), vhosts: make([]*vhostEnc, 0, n), parts: make([][]byte, 0, n)}
	if e.name != "" {
		e.size += protowire.SizeTag(routeConfigNameField) + protowire.SizeBytes(len(e.name))
	}
	for _, vh := range rc.GetVirtualHosts() {
		x, b, err := v.entry(vh)
		if err != nil {
			return nil, err
		}
		e.vhosts = append(e.vhosts, x)
		e.parts = append(e.parts, b)
		e.size += protowire.SizeTag(routeConfigVhostsField) + protowire.SizeBytes(len(b))
	}
	// The other fields, marshaled from a shell sharing their values.
	rest, err := proto.MarshalOptions{Deterministic: true}.Marshal(shell(rc, routeConfigNameField, routeConfigVhostsField))
	if err != nil {
		return nil, err
	}
	e.rest = rest
	e.size += len(rest)
	return e, nil
}

// writeTo writes the joined encoding to w piece by piece: the framing of
// each field, then its bytes.
func (e *routeConfigEnc) writeTo(w io.Writer) {
	var hdr [2 * binary.MaxVarintLen64]byte
	field := func(n protoreflect.FieldNumber, b []byte) {
		w.Write(protowire.AppendVarint(protowire.AppendTag(hdr[:0], n, protowire.BytesType), uint64(len(b))))
		w.Write(b)
	}
	if e.name != "" {
		field(routeConfigNameField, []byte(e.name))
	}
	for _, b := range e.parts {
		field(routeConfigVhostsField, b)
	}
	w.Write(e.rest)
}

// adopt points each virtual host's kept encoding into joined, the route
// configuration's bytes as bytes() made them (the Any's value, never
// changed), so a virtual host's bytes are kept once, inside the route
// configuration that carries them, rather than also in a buffer of their
// own: at 5,000 services that was 5 MB, all of a gateway's virtual hosts
// a second time. A route configuration built later takes them over in
// turn, so an older one is freed with its resource.
func (v *vhostBytes) adopt(e *routeConfigEnc, joined []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	off := 0
	if e.name != "" {
		off += protowire.SizeTag(routeConfigNameField) + protowire.SizeBytes(len(e.name))
	}
	for i, x := range e.vhosts {
		b := e.parts[i]
		off += protowire.SizeTag(routeConfigVhostsField) + protowire.SizeVarint(uint64(len(b)))
		if off+len(b) > len(joined) {
			return
		}
		in := joined[off : off+len(b) : off+len(b)]
		off += len(b)
		if len(x.b) == len(in) && bytes.Equal(x.b, in) {
			x.b = in
		}
	}
}

// bytes returns the joined encoding in a buffer of exactly its size.
func (e *routeConfigEnc) bytes() []byte {
	buf := bytes.NewBuffer(make([]byte, 0, e.size))
	e.writeTo(buf)
	return buf.Bytes()
}

// sum is the SHA-256 of the joined encoding, taken part by part.
func (e *routeConfigEnc) sum() [sha256.Size]byte {
	h := sha256.New()
	e.writeTo(h)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
