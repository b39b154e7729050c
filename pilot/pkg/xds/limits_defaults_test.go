package xds

import (
	"testing"
	"time"
)

// A zero field takes its default; a set or negative (off) one is kept.
func TestLimitsWithDefaults(t *testing.T) {
	if got := (Limits{}).withDefaults(); got != DefaultLimits {
		t.Fatalf("zero Limits = %+v, want DefaultLimits %+v", got, DefaultLimits)
	}
	in := Limits{SendTimeout: time.Second, RequestsPerSecond: -1, MaxTypesPerStream: -1, SharedNamesBytes: 7}
	got := in.withDefaults()
	if got.SendTimeout != time.Second || got.RequestsPerSecond != -1 || got.MaxTypesPerStream != -1 || got.SharedNamesBytes != 7 {
		t.Fatalf("set fields changed: %+v", got)
	}
	if got.MaxResourceNamesPerRequest != DefaultLimits.MaxResourceNamesPerRequest || got.StreamBurst != DefaultLimits.StreamBurst {
		t.Fatalf("zero fields not defaulted: %+v", got)
	}
}
