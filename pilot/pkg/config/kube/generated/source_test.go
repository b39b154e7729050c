package generated

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

// fakeConversion is what Convert returns; set it, then Schedule.
type fakeConversion struct {
	mu     sync.Mutex
	cfgs   []config.Config
	err    error
	failed chan struct{} // one token per failed call, if not nil
}

func (f *fakeConversion) set(err error, cfgs ...config.Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfgs, f.err = cfgs, err
}

func (f *fakeConversion) convert() ([]config.Config, []*config.Error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		if f.failed != nil {
			f.failed <- struct{}{}
		}
		return nil, nil, f.err
	}
	return f.cfgs, nil, nil
}

type delivered struct {
	ev  model.Event
	key config.Key
}

// startSource runs a Source over one (fake) Service informer and its queue.
func startSource(t *testing.T, conv *fakeConversion) (*Source, chan delivered) {
	t.Helper()
	q := queue.New(queue.Options{BaseBackoff: time.Millisecond})
	s, err := NewSource(SourceOptions{Name: "Test", ErrPrefix: "test", Queue: q, Convert: conv.convert})
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if err := s.Watch("Services", f.Core().V1().Services().Informer(), s.OnAnyChange()); err != nil {
		t.Fatal(err)
	}
	events := make(chan delivered, 100)
	s.RegisterEventHandler(schema.Gateway, func(_, cur config.Config, ev model.Event) {
		events <- delivered{ev: ev, key: cur.Key()}
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(ctx) })
	wg.Go(func() { s.Run(ctx, []Factory{f}) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s, events
}

func next(t *testing.T, events chan delivered) delivered {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return delivered{}
	}
}

func TestSourceConvertsOnceSyncedThenOnChange(t *testing.T) {
	conv := &fakeConversion{}
	conv.set(nil, objects.Gateway("a", "gw", "x"))
	s, events := startSource(t, conv)
	select {
	case <-s.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced within 10s")
	}
	if !s.HasSynced() {
		t.Fatal("Synced closed but HasSynced false")
	}
	// The first conversion's objects reached the handler before Synced.
	select {
	case e := <-events:
		if e.ev != model.EventAdd || e.key.Name != "gw" {
			t.Fatalf("first event %v, want add of a/gw", e)
		}
	default:
		t.Fatal("Synced closed before the first conversion reached the handlers")
	}

	conv.set(nil, objects.Gateway("a", "gw", "changed"))
	s.Schedule()
	if e := next(t, events); e.ev != model.EventUpdate || e.key.Name != "gw" {
		t.Fatalf("after change: %v, want update of a/gw", e)
	}
	if g := s.Get(schema.Gateway, "a", "gw"); g == nil {
		t.Fatal("Get a/gw = nil after update")
	}
}

func TestSourceConversionErrorKeepsContent(t *testing.T) {
	conv := &fakeConversion{}
	conv.set(nil, objects.Gateway("a", "gw", "x"))
	s, events := startSource(t, conv)
	<-s.Synced()
	next(t, events) // add a/gw

	// While the caches cannot be read, nothing is deleted and the queue
	// retries; once they can, the retry delivers the new content.
	conv.mu.Lock()
	conv.failed = make(chan struct{}, 100)
	conv.mu.Unlock()
	conv.set(errors.New("cache unreadable"), objects.Gateway("a", "gw2", "x"))
	s.Schedule()
	for range 2 { // the failure and one retry
		select {
		case <-conv.failed:
		case <-time.After(10 * time.Second):
			t.Fatal("Convert not called (or not retried) within 10s")
		}
	}
	select {
	case e := <-events:
		t.Fatalf("a failed conversion gave event %v", e)
	default:
	}
	if s.Get(schema.Gateway, "a", "gw") == nil {
		t.Fatal("a failed conversion dropped a/gw")
	}
	conv.set(nil, objects.Gateway("a", "gw2", "x"))
	// Sorted by key: gw's delete, then gw2's add.
	if e := next(t, events); e.ev != model.EventDelete || e.key.Name != "gw" {
		t.Fatalf("after retry: %v, want delete of a/gw", e)
	}
	if e := next(t, events); e.ev != model.EventAdd || e.key.Name != "gw2" {
		t.Fatalf("after retry: %v, want add of a/gw2", e)
	}
}

func TestNewSourceNeedsQueueAndConvert(t *testing.T) {
	if _, err := NewSource(SourceOptions{Convert: (&fakeConversion{}).convert}); err == nil {
		t.Fatal("NewSource without a Queue succeeded")
	}
	if _, err := NewSource(SourceOptions{Queue: queue.New(queue.Options{})}); err == nil {
		t.Fatal("NewSource without Convert succeeded")
	}
}
