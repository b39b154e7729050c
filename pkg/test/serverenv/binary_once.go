package serverenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	onceMu   sync.Mutex
	onceBin  string
	onceErr  error
	onceDone bool
)

// BinaryOnce builds pilot-discovery (without the race detector) the first
// time a test of the process asks for it, so a run whose tests skip
// builds nothing, and returns the same path to every later caller. The
// binary lives in a temporary folder for the rest of the process.
func BinaryOnce(t testing.TB) string {
	t.Helper()
	onceMu.Lock()
	defer onceMu.Unlock()
	if !onceDone {
		onceDone = true
		dir, err := os.MkdirTemp("", "wayfinder-bin")
		if err != nil {
			onceErr = err
		} else {
			onceBin, onceErr = BuildBinary(dir, false)
		}
	}
	if onceErr != nil {
		t.Fatal(onceErr)
	}
	return onceBin
}

// RemoveBinaryOnce deletes what BinaryOnce built, if anything; TestMain
// calls it after the tests.
func RemoveBinaryOnce() {
	onceMu.Lock()
	defer onceMu.Unlock()
	if onceBin != "" {
		os.RemoveAll(filepath.Dir(onceBin))
	}
}
