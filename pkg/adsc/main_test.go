package adsc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// client's, the control plane's or gRPC's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
