package limits

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"
)

// A client that gives up while queued for admission leaves without a
// token: the next stream waits no longer than it would have.
func TestAdmissionOfAGoneClientReturnsItsToken(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	a := newAdmission(clk, 1, 1, -1)
	if d, err := a.wait(context.Background(), context.Background()); err != nil || d != 0 {
		t.Fatalf("first stream: waited %v, %v; want admitted at once", d, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.wait(ctx, context.Background()); status.Code(err) != codes.Canceled {
		t.Errorf("admission with a cancelled client: %v", err)
	}
	if waiting, debt := a.queue(); waiting != 0 || debt != 0 {
		t.Errorf("after the client gave up: %d waiting, %v tokens owed; want none", waiting, debt)
	}
}
