package xds

import (
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
	cur, prev map[*routev3.VirtualHost][]byte
}

func (v *vhostBytes) rotate() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.prev, v.cur = v.cur, make(map[*routev3.VirtualHost][]byte, len(v.cur))
}

func (v *vhostBytes) get(vh *routev3.VirtualHost) ([]byte, error) {
	v.mu.Lock()
	b, ok := v.cur[vh]
	if !ok {
		if b, ok = v.prev[vh]; ok {
			v.cur[vh] = b
		}
	}
	v.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vh)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if v.cur == nil {
		v.cur = map[*routev3.VirtualHost][]byte{}
	}
	v.cur[vh] = b
	v.mu.Unlock()
	return b, nil
}

// Field numbers of RouteConfiguration that appendRouteConfig writes
// itself; they are the two lowest, so they come first in the
// deterministic encoding, as the marshaler orders fields by number.
const (
	routeConfigNameField   = 1
	routeConfigVhostsField = 2
)

// appendRouteConfig appends the deterministic encoding of rc to b: byte
// for byte what proto.MarshalOptions{Deterministic: true} gives (a test
// holds it to that), with the virtual hosts' encodings taken from v.
func (v *vhostBytes) appendRouteConfig(b []byte, rc *routev3.RouteConfiguration) ([]byte, error) {
	if rc.GetName() != "" {
		b = protowire.AppendTag(b, routeConfigNameField, protowire.BytesType)
		b = protowire.AppendString(b, rc.GetName())
	}
	for _, vh := range rc.GetVirtualHosts() {
		enc, err := v.get(vh)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, routeConfigVhostsField, protowire.BytesType)
		b = protowire.AppendBytes(b, enc)
	}
	// The other fields, marshaled from a shell sharing their values.
	rest := &routev3.RouteConfiguration{}
	dst := rest.ProtoReflect()
	rc.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		if n := fd.Number(); n != routeConfigNameField && n != routeConfigVhostsField {
			dst.Set(fd, val)
		}
		return true
	})
	dst.SetUnknown(rc.ProtoReflect().GetUnknown())
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, rest)
}
