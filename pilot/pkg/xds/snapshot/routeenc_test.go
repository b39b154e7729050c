package snapshot

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

// routeWorkload is one gateway on port 80 and n services, each with two
// subsets and a VirtualService splitting its traffic 90/10 between them
// (changed: the index of one VirtualService split otherwise, or -1), as
// the server's benchmarks serve them.
func routeWorkload(n, changed int) []config.Config {
	out := []config.Config{objects.GatewayServers("istio-system", "gw",
		&networking.Server{Port: &networking.Port{Number: 80, Protocol: "HTTP", Name: "http"}, Hosts: []string{"*"}})}
	for i := range n {
		name := "svc-" + strconv.Itoa(i)
		host := name + ".bench.svc.cluster.local"
		w := int32(10)
		if i == changed {
			w = 11
		}
		out = append(out,
			objects.ServiceEntry("bench", name, host, 80, "10.0.0.1"),
			objects.DestinationRule("bench", name, host, "v1", "v2"),
			objects.New(schema.VirtualService, "bench", name, &networking.VirtualService{
				Hosts: []string{name + ".example.com"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{
					{Destination: &networking.Destination{Host: host, Subset: "v1", Port: &networking.PortSelector{Number: 80}}, Weight: 100 - w},
					{Destination: &networking.Destination{Host: host, Subset: "v2", Port: &networking.PortSelector{Number: 80}}, Weight: w},
				}}},
			}))
	}
	return out
}

// generatedRoutes are the route configurations the translators make of
// cs for its Gateways.
func generatedRoutes(cs []config.Config) []*routev3.RouteConfiguration {
	push := model.NewPushContext(memory.New(cs))
	return core.DefaultGenerator{}.BuildGateway(push, push.Gateways(), model.SecretScope{}).Routes
}

// A route configuration's encoding from parts (routeConfigEnc: joined,
// its bytes and its hash) must be exactly the deterministic
// marshaling's, or content hashes (delta versions) and the bytes on the
// wire would change.
func TestRouteConfigEncodingMatchesMarshal(t *testing.T) {
	rcs := generatedRoutes(routeWorkload(20, -1))
	full := &routev3.RouteConfiguration{
		Name:                           "full",
		VirtualHosts:                   rcs[0].GetVirtualHosts(),
		ValidateClusters:               wrapperspb.Bool(false),
		IgnorePortInHostMatching:       true,
		MaxDirectResponseBodySizeBytes: wrapperspb.UInt32(1 << 20),
		RequestHeadersToAdd:            []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-a", Value: "b"}}},
		ResponseHeadersToRemove:        []string{"x-c"},
	}
	full.ProtoReflect().SetUnknown([]byte{0xf8, 0x7f, 0x01}) // field 2047, varint 1
	cases := append(rcs, full, &routev3.RouteConfiguration{}, &routev3.RouteConfiguration{Name: "only-name"})
	var v vhostBytes
	for round := range 2 { // cold, then from kept virtual host bytes
		for _, rc := range cases {
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
			if err != nil {
				t.Fatal(err)
			}
			e, err := v.encode(rc)
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.NewBufferString("prefix")
			e.writeTo(got)
			if !bytes.Equal(got.Bytes()[len("prefix"):], want) {
				t.Errorf("round %d, %s: encoding differs from proto.Marshal", round, rc.GetName())
			}
			// The parts hash to the joined bytes' hash, and join into a
			// buffer of exactly their size.
			if e.sum() != sha256.Sum256(want) {
				t.Errorf("round %d, %s: hash of the parts differs from the encoding's", round, rc.GetName())
			}
			b := e.bytes()
			if !bytes.Equal(b, want) || cap(b) != len(want) {
				t.Errorf("round %d, %s: bytes() gives %d bytes in a buffer of %d, want %d in %d", round, rc.GetName(), len(b), cap(b), len(want), len(want))
			}
			// Once adopted, the virtual hosts' kept bytes are the route
			// configuration's own (the next round encodes from them).
			v.adopt(e, b)
			for i, x := range e.vhosts {
				if !sliceWithin(x.b, b) {
					t.Errorf("round %d, %s: virtual host %d keeps bytes of its own, not the route configuration's", round, rc.GetName(), i)
				}
			}
			if (v.validate(rc) == nil) != (rc.ValidateAll() == nil) {
				t.Errorf("round %d, %s: validate says %v, ValidateAll %v", round, rc.GetName(), v.validate(rc), rc.ValidateAll())
			}
		}
	}
	// A virtual host Envoy would reject (no domains) fails validation
	// through the kept results too, cold and warm.
	bad := &routev3.RouteConfiguration{Name: "bad", VirtualHosts: append(slices.Clone(rcs[0].GetVirtualHosts()), &routev3.VirtualHost{Name: "x"})}
	for range 2 {
		if err := v.validate(bad); err == nil || bad.ValidateAll() == nil {
			t.Errorf("invalid virtual host: validate %v, ValidateAll %v", err, bad.ValidateAll())
		}
	}
}

// An interned route configuration holds its virtual hosts' bytes once:
// the kept encodings are slices of the resource's value, for the first
// route configuration and for one built after a change.
func TestInternedRouteConfigurationKeepsVirtualHostsOnce(t *testing.T) {
	in := NewInterner(nil)
	// The second round changes one VirtualService's weights.
	for round, cs := range [][]config.Config{routeWorkload(20, -1), routeWorkload(20, 3)} {
		rc := generatedRoutes(cs)[0]
		in.Rotate(RDS)
		r, err := in.intern(RDS, "", rc.GetName(), rc)
		if err != nil {
			t.Fatal(err)
		}
		for i, vh := range rc.GetVirtualHosts() {
			x := in.vhosts.cur[vh]
			if x == nil || !sliceWithin(x.b, r.Any.GetValue()) {
				t.Errorf("round %d: virtual host %d keeps bytes of its own, not the route configuration's", round, i)
			}
		}
	}
}

// sliceWithin reports whether part's bytes lie inside whole's.
func sliceWithin(part, whole []byte) bool {
	if len(part) == 0 || len(whole) == 0 {
		return len(part) == 0
	}
	p, w := uintptr(unsafe.Pointer(unsafe.SliceData(part))), uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	return p >= w && p+uintptr(len(part)) <= w+uintptr(len(whole))
}
