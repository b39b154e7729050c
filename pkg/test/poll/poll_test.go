package poll

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	if err := Wait(func() bool { return n.Add(1) >= 3 }, Interval(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("checked %d times, want 3 (stop at the first success)", got)
	}
}

func TestWaitSeenReportsTheLastDescriptionAtTheDeadline(t *testing.T) {
	var n atomic.Int32
	last, err := WaitSeen(func() (string, bool) {
		return "try " + string(rune('0'+n.Add(1)%10)), false
	}, Timeout(20*time.Millisecond), Interval(time.Millisecond))
	if err == nil {
		t.Fatal("want a timeout error")
	}
	if !strings.HasPrefix(last, "try ") {
		t.Errorf("last = %q, want the last description", last)
	}
}

func TestValueReturnsTheFirstAcceptedValue(t *testing.T) {
	var n atomic.Int32
	got := Value(t, "three", func() (int32, error) {
		v := n.Add(1)
		if v == 1 {
			return 0, errors.New("not yet")
		}
		return v, nil
	}, func(v int32) bool { return v >= 3 }, Interval(time.Millisecond))
	if got != 3 {
		t.Errorf("Value = %d, want 3", got)
	}
}

func TestTriesBoundsTheChecks(t *testing.T) {
	var n atomic.Int32
	err := Wait(func() bool { n.Add(1); return false }, Tries(5), Interval(0))
	if err == nil || !strings.Contains(err.Error(), "5 tries") {
		t.Fatalf("err = %v, want a failure after 5 tries", err)
	}
	if got := n.Load(); got != 5 {
		t.Errorf("checked %d times, want 5", got)
	}
}
