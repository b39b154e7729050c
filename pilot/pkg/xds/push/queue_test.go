package push

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// The config debouncer's merge extends its own batch in place but gives what
// model.PushRequest.Merge gives, and never modifies a caller's request.
func TestMergeRequestsMatchesMerge(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	q := NewQueue(debounce.Options{}, debounce.Options{}, func(*model.PushRequest) {})
	var reqs []*model.PushRequest
	for i := range 50 {
		reqs = append(reqs, &model.PushRequest{
			Full:           i == 7,
			ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.VirtualService, Namespace: "default", Name: fmt.Sprint("vs-", i%20)}: {}},
			Reasons:        map[string]int{fmt.Sprint("r", i%3): 1},
			Start:          t0.Add(time.Duration(50-i) * time.Millisecond),
		})
	}
	var want, got *model.PushRequest
	for _, r := range reqs {
		want = want.Merge(r)
		got = q.merge(got, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	for i, r := range reqs {
		if len(r.ConfigsUpdated) != 1 || len(r.Reasons) != 1 {
			t.Errorf("request %d was modified: %+v", i, r)
		}
	}
	// A fired batch is never extended again.
	q.fireConfig(got)
	before := len(got.ConfigsUpdated)
	if next := q.merge(got, reqs[0]); next == got || len(got.ConfigsUpdated) != before {
		t.Error("a fired batch was extended in place")
	}
}

// A Full request goes through the config debouncer and an endpoint-only
// one through the endpoint debouncer, each fired once; Run returns once
// ctx ends.
func TestQueueRoutesRequestsAndStops(t *testing.T) {
	fired := make(chan *model.PushRequest, 2)
	opts := debounce.Options{QuietPeriod: time.Millisecond, MaxDelay: 10 * time.Millisecond}
	q := NewQueue(opts, opts, func(req *model.PushRequest) { fired <- req })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	full := &model.PushRequest{Full: true, Reasons: map[string]int{"full": 1}}
	eds := &model.PushRequest{Reasons: map[string]int{"eds": 1}}
	q.Enqueue(full)
	q.Enqueue(eds)
	got := map[bool]*model.PushRequest{}
	for range 2 {
		select {
		case r := <-fired:
			got[r.Full] = r
		case <-time.After(10 * time.Second):
			t.Fatal("a request was never fired")
		}
	}
	if got[true] == nil || got[true].Reasons["full"] != 1 || got[false] == nil || got[false].Reasons["eds"] != 1 {
		t.Errorf("fired %+v, want the full and the endpoint request apart", got)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
