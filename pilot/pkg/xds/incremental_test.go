package xds

import (
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// A route configuration's encoding from parts (routeConfigEnc: joined,
// its bytes and its hash) must be exactly the deterministic
// marshaling's, or content hashes (delta versions) and the bytes on the
// wire would change.
func TestRouteConfigEncodingMatchesMarshal(t *testing.T) {
	push := model.NewPushContext(newTestStore(benchWorkload(20)...))
	res := CoreGenerator{}.BuildGateway(push, push.Gateways(), model.SecretScope{})
	rcs := res.Routes
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
	cfgs := benchWorkload(20)
	in := newInterner(nil)
	for round, cs := range [][]config.Config{cfgs, func() []config.Config { next, _ := changeOneVirtualService(cfgs, 3, 1); return next }()} {
		push := model.NewPushContext(newTestStore(cs...))
		rc := CoreGenerator{}.BuildGateway(push, push.Gateways(), model.SecretScope{}).Routes[0]
		in.rotate(rdsIdx)
		r, err := in.intern(rdsIdx, "", rc.GetName(), rc)
		if err != nil {
			t.Fatal(err)
		}
		for i, vh := range rc.GetVirtualHosts() {
			x := in.vhosts.cur[vh]
			if x == nil || !sliceWithin(x.b, r.any.GetValue()) {
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

// TestOneVirtualServiceChangeTranslatesOne changes one VirtualService of
// 5,000 and asserts the push translates that one alone, keeps every
// cluster and endpoint as they were, and serves the new routes.
func TestOneVirtualServiceChangeTranslatesOne(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 services")
	}
	const services = 5000
	cfgs := benchWorkload(services)
	store := newTestStore(cfgs...)
	s := NewDiscoveryServer(Options{Store: store, Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for i := range 3 {
		id := nodeID("gw-" + strconv.Itoa(i))
		p := &model.Proxy{ID: id, Type: model.Router, Namespace: "istio-system", Labels: ingressLabels}
		s.proxies[id] = &proxyState{proxy: p, streams: map[streamKey]*streamState{}, pending: map[string]pendingChange{}}
	}
	s.push(&model.PushRequest{Full: true, Reasons: map[string]int{"test": 1}})
	routes := s.gen.(CoreGenerator).Caches.Routes
	before := routes.Stats()
	if before.Translations != services {
		t.Fatalf("first push translated %d VirtualServices, want %d", before.Translations, services)
	}
	v0 := s.proxies[nodeID("gw-0")].view

	next, key := changeOneVirtualService(cfgs, 1234, 77)
	store.set(next...)
	s.push(&model.PushRequest{Full: true, ConfigsUpdated: map[config.Key]struct{}{key: {}}, Reasons: map[string]int{"config": 1}})

	after := routes.Stats()
	if n := after.Translations - before.Translations; n != 1 {
		t.Errorf("one VirtualService changed: %d translated, want 1", n)
	}
	if n := after.Reused - before.Reused; n != services-1 {
		t.Errorf("%d translations reused, want %d", n, services-1)
	}
	v1 := s.proxies[nodeID("gw-0")].view
	if v1.sets[cdsIdx] != v0.sets[cdsIdx] || v1.sets[edsIdx] != v0.sets[edsIdx] {
		t.Error("clusters or endpoints were rebuilt for a VirtualService change")
	}
	if v1.sets[ldsIdx].version != v0.sets[ldsIdx].version {
		t.Error("listener version changed for a VirtualService change")
	}
	if v1.sets[rdsIdx].version == v0.sets[rdsIdx].version {
		t.Fatal("route version unchanged after a VirtualService change")
	}
	rc := &routev3.RouteConfiguration{}
	if err := v1.sets[rdsIdx].items[0].any.UnmarshalTo(rc); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, vh := range rc.GetVirtualHosts() {
		if vh.GetName() == "svc-1234.example.com:80" {
			found = true
			if w := vh.GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters()[1].GetWeight().GetValue(); w != 10+77%80 {
				t.Errorf("changed VirtualService serves weight %d, want %d", w, 10+77%80)
			}
		}
	}
	if !found {
		t.Error("virtual host of the changed VirtualService is missing")
	}
	for id, p := range s.proxies {
		if p.view != v1 {
			t.Errorf("%s does not share the group's view", id)
		}
	}
}
