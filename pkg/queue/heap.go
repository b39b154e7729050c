package queue

import "time"

// item is a queued task with its schedule.
type item struct {
	task Task
	due  time.Time
	// seq breaks ties between equal due times in push order.
	seq uint64
	// attempt counts the failures so far.
	attempt int
	// initial marks a task pushed before Run started, for HasSynced.
	initial bool
}

// itemHeap orders items by due time, then push order (container/heap).
type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }

func (h itemHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}

func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *itemHeap) Push(x any) { *h = append(*h, x.(*item)) }

func (h *itemHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}
