package xds

import "sync"

// outbox queues the responses the cache produces for one stream until the
// stream's loop sends them. put never blocks and never drops: a stream has
// at most one open watch per type and each answers once, so an outbox
// holds at most one response per type the stream asked for.
type outbox[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{} // has a value when items may be non-empty
}

func newOutbox[T any]() *outbox[T] { return &outbox[T]{ready: make(chan struct{}, 1)} }

func (o *outbox[T]) put(x T) {
	o.mu.Lock()
	o.items = append(o.items, x)
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// take returns the queued responses, oldest first, and empties the queue.
func (o *outbox[T]) take() []T {
	o.mu.Lock()
	defer o.mu.Unlock()
	items := o.items
	o.items = nil
	return items
}
