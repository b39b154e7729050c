package serverenv

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// Gateway connects an Envoy-like gateway in istio-system with Istio's node
// identity and labels to addr; reject, when set, decides which responses it
// NACKs. The client closes when the test ends.
func Gateway(t testing.TB, addr, pod string, labels map[string]string, reject func(string, []*anypb.Any) error) *adsc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	c, err := adsc.Dial(ctx, adsc.Config{
		Address: addr,
		Node:    adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: "istio-system", Labels: labels}),
		Reject:  reject,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// WaitFor waits up to timeout until cond holds for the client's accepted
// state, failing the test with what it waited for and the state it saw.
func WaitFor(t testing.TB, c *adsc.Client, what string, timeout time.Duration, cond func(adsc.State) bool) adsc.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v (state: %s)", what, err, Describe(c.State()))
	}
	return c.State()
}

// Describe summarises a client's state per type: version, names, last error.
func Describe(s adsc.State) string {
	var b strings.Builder
	for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType, adsc.RouteType} {
		ts := s.Types[typ]
		b.WriteString(adsc.ShortName(typ) + "{version=" + ts.Version + " names=" + strings.Join(s.Names(typ), ",") + " err=" + ts.Error + "} ")
	}
	return b.String()
}
