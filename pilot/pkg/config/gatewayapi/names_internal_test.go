package gatewayapi

import (
	"strings"
	"testing"
)

// A generated name over 63 characters is cut, stays a DNS-1123 label
// ending in the suffix, and differs for inputs that share the cut part.
func TestGeneratedNameFitsALabel(t *testing.T) {
	short := "edge-http-gwapi"
	if got := generatedName(short); got != short {
		t.Errorf("short name changed: %q", got)
	}
	long := strings.Repeat("a", 40) + "-" + strings.Repeat("b", 30) + "-one-gwapi"
	other := strings.Repeat("a", 40) + "-" + strings.Repeat("b", 30) + "-two-gwapi"
	a, b := generatedName(long), generatedName(other)
	for _, n := range []string{a, b} {
		if len(n) > 63 || !strings.HasSuffix(n, "-gwapi") || strings.Contains(n, "--") {
			t.Errorf("%q: want at most 63 characters ending -gwapi", n)
		}
	}
	if a == b || generatedName(long) != a {
		t.Errorf("names not unique or not stable: %q %q", a, b)
	}
}
