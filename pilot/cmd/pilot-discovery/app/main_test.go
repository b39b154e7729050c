package app

import (
	"testing"

	"go.uber.org/goleak"
)

// The command starts the server and a signal goroutine; a test that runs
// it must leave nothing behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
