package push

import (
	"testing"

	"go.uber.org/goleak"
)

// Queue.Run runs the debouncers' loops: none may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
