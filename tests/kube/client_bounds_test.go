package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/heap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// newBoundsEnv is a secureEnv whose server has the given ADS limits.
func newBoundsEnv(t *testing.T, l limits.Options) *secureEnv {
	t.Helper()
	return newSecureEnvWith(t, "bounds", bootstrap.Options{Limits: bootstrap.Limits{XDS: l}})
}

// rawDelta is a delta ADS stream to the secure port with a token, for a
// client that sends what it likes.
type rawDelta struct {
	stream discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	sent   bool
	node   string
	ns     string
}

func (e *secureEnv) rawDelta(ns, pod, token string) *rawDelta {
	e.t.Helper()
	cc, err := grpc.NewClient(e.server.SecureGRPCAddr().String(),
		grpc.WithTransportCredentials(credentials.NewTLS(e.tlsConfig(nil))), grpc.WithPerRPCCredentials(bearer(token)))
	e.must(err)
	e.t.Cleanup(func() { cc.Close() })
	sctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	e.t.Cleanup(cancel)
	stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(sctx)
	e.must(err)
	return &rawDelta{stream: stream, node: pod, ns: ns}
}

// subscribe sends one request; it reports false once the stream has
// ended (the server closed it).
func (r *rawDelta) subscribe(typeURL string, names ...string) bool {
	req := &discoverygrpc.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names}
	if !r.sent {
		req.Node = adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: r.node, Namespace: r.ns, Labels: map[string]string{"istio": "ingressgateway"}})
		r.sent = true
	}
	err := r.stream.Send(req)
	return err == nil
}

// end reads until the stream ends and returns how it ended.
func (r *rawDelta) end() error {
	for {
		if _, err := r.stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// The long-name attack with a real ServiceAccount token on the secure
// port: a delta stream subscribing names of a megabyte (249 of them grew
// the server by 258 MiB in 4 s, and the stream stayed open) is closed at
// its first such name, and one subscribing names within the length bound
// is closed once its subscription holds the byte bound. The heap does not
// keep what they sent, and a good gateway of the same ServiceAccount is
// served throughout.
func TestLongNameDeltaStreamIsClosed(t *testing.T) {
	e := newBoundsEnv(t, limits.Options{})
	token := e.c.Token(t, e.ns, "gateway", []string{"wayfinder"}, time.Hour)
	good, err := e.dial(e.ns, "gw-good", token, nil)
	e.must(err)
	waitFor(t, good, "config", func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
	base := heap.AfterGC()

	long := e.rawDelta(e.ns, "gw-long", token)
	for i := 0; i < 249; i++ {
		if !long.subscribe(resourcev3.EndpointType, strings.Repeat(fmt.Sprintf("%03d", i), 1<<20/3)) {
			break
		}
	}
	// Measured while the client still holds its stream: before, the
	// server held every name sent (258 MiB after 249 of them).
	during := heap.AfterGC()
	wantCode(t, "a delta stream of 1 MiB names", long.end(), codes.ResourceExhausted, "name_length")

	many := e.rawDelta(e.ns, "gw-many", token)
	for i := 0; i < 249; i++ {
		names := make([]string, 100)
		for j := range names {
			names[j] = fmt.Sprintf("%03d-%03d-%s", i, j, strings.Repeat("x", 1000))
		}
		if !many.subscribe(resourcev3.EndpointType, names...) {
			break
		}
	}
	wantCode(t, "a delta stream of 1 KB names", many.end(), codes.ResourceExhausted, "subscribed_bytes")

	after := heap.AfterGC()
	t.Logf("heap %d MiB before, %d MiB while the 1 MiB names were sent, %d MiB after the two long-name streams", base>>20, during>>20, after>>20)
	if during > base+16<<20 || after > base+16<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB (%d MiB after)", base>>20, during>>20, after>>20)
	}
	for limit, least := range map[string]float64{"name_length": 1, "subscribed_bytes": 1} {
		if got := e.metric(fmt.Sprintf(`wayfinder_xds_limit_exceeded_total{limit=%q}`, limit)); got < least {
			t.Errorf("wayfinder_xds_limit_exceeded_total{limit=%q} = %v, want at least %v", limit, got, least)
		}
	}
	e.createVS(e.virtualService("second", "second.example.com", "x.example.com", ""))
	waitFor(t, good, "an update after the attack", func(s adsc.State) bool { return virtualHost(s, "second.example.com", "") })
}

// Streams of one real ServiceAccount are bounded: one more than allowed is
// refused with ResourceExhausted, another ServiceAccount of the namespace
// is not affected, and a closed stream makes room.
func TestStreamsPerServiceAccountAreBounded(t *testing.T) {
	e := newBoundsEnv(t, limits.Options{MaxStreamsPerIdentity: 2})
	aud := []string{"wayfinder"}
	token := e.c.Token(t, e.ns, "gateway", aud, time.Hour)
	var open []*adsc.Client
	for _, pod := range []string{"gw-1", "gw-2"} {
		c, err := e.dial(e.ns, pod, token, nil)
		e.must(err)
		waitFor(t, c, "config", func(s adsc.State) bool { return virtualHost(s, "first.example.com", "") })
		open = append(open, c)
	}
	wantCode(t, "a third stream of one ServiceAccount", e.refused(e.ns, "gw-3", token, nil), codes.ResourceExhausted, "streams_per_identity")
	if err := e.refused(e.ns, "gw-other", e.c.Token(t, e.ns, "other", aud, time.Hour), nil); err != nil {
		t.Errorf("another ServiceAccount: %v", err)
	}
	if got := e.metric(`wayfinder_xds_limit_exceeded_total{limit="streams_per_identity"}`); got != 1 {
		t.Errorf(`wayfinder_xds_limit_exceeded_total{limit="streams_per_identity"} = %v, want 1`, got)
	}
	open[1].Close()
	// Polled: the closed stream's end reaches the server asynchronously.
	poll.Seen(t, "a stream after one of the two closed", func() (string, bool) {
		err := e.refused(e.ns, "gw-4", token, nil)
		return fmt.Sprint(err), err == nil
	}, poll.Timeout(waitTimeout), poll.Interval(100*time.Millisecond))
}
