package e2e

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// binary is pilot-discovery built once, with the race detector, by TestMain.
var binary string

// startProcess runs pilot-discovery in file mode on configDir, debouncing
// briefly and logging at debug level, once it has logged its addresses.
func startProcess(t *testing.T, configDir string, args ...string) *serverenv.Binary {
	t.Helper()
	return serverenv.StartBinary(t, binary, append([]string{"--config-dir", configDir, "--log-level", "debug", "--debounce-after", "10ms"}, args...)...)
}

func copyDir(t *testing.T, src string) string { return serverenv.CopyDir(t, src) }

func writeFile(t *testing.T, path, data string) { serverenv.WriteFile(t, path, data) }
