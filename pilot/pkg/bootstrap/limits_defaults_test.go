package bootstrap

import (
	"testing"
	"time"
)

// A zero field takes its gRPC default; a set one is kept.
func TestLimitsApplyDefaults(t *testing.T) {
	var l Limits
	l.applyDefaults()
	if l != DefaultLimits {
		t.Fatalf("zero Limits = %+v, want DefaultLimits %+v", l, DefaultLimits)
	}
	l = Limits{MaxRecvMsgBytes: 1, KeepaliveTime: time.Minute}
	l.applyDefaults()
	if l.MaxRecvMsgBytes != 1 || l.KeepaliveTime != time.Minute {
		t.Fatalf("set fields changed: %+v", l)
	}
	if l.KeepaliveTimeout != DefaultLimits.KeepaliveTimeout || l.MaxStreamsPerConnection != DefaultLimits.MaxStreamsPerConnection {
		t.Fatalf("zero fields not defaulted: %+v", l)
	}
}
