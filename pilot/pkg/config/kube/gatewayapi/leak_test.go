package gatewayapi

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine outlives them:
// every Run loop here must stop when its context is cancelled.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
