package limits

import (
	"testing"
	"time"
)

// A zero field takes its default; a set or negative (off) one is kept.
func TestOptionsWithDefaults(t *testing.T) {
	if got := (Options{}).WithDefaults(); got != Defaults {
		t.Fatalf("zero Options = %+v, want Defaults %+v", got, Defaults)
	}
	in := Options{SendTimeout: time.Second, RequestsPerSecond: -1, MaxTypesPerStream: -1, SharedNamesBytes: 7}
	got := in.WithDefaults()
	if got.SendTimeout != time.Second || got.RequestsPerSecond != -1 || got.MaxTypesPerStream != -1 || got.SharedNamesBytes != 7 {
		t.Fatalf("set fields changed: %+v", got)
	}
	if got.MaxResourceNamesPerRequest != Defaults.MaxResourceNamesPerRequest || got.StreamBurst != Defaults.StreamBurst {
		t.Fatalf("zero fields not defaulted: %+v", got)
	}
}
