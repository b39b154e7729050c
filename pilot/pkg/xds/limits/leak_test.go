package limits

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine outlives them: the
// admission queue's waiters must all return when their client goes away.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
