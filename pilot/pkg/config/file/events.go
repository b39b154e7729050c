package file

import (
	"cmp"
	"maps"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// change is one difference between two store views.
type change struct {
	event model.Event
	old   config.Config
	cur   config.Config
	// silent marks an object whose content is unchanged but whose stored
	// value was replaced (its Source moved, say): handlers are not called,
	// only the delivered view is refreshed.
	silent bool
}

// diff returns the changes from old to cur, sorted by key.
func diff(old, cur map[config.Key]config.Config) []change {
	keys := make([]config.Key, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	return diffKeys(old, cur, keys)
}

// diffKeys returns the changes from old to cur at keys, in their order.
func diffKeys(old, cur map[config.Key]config.Config, keys []config.Key) []change {
	var out []change
	for _, k := range keys {
		o, hadOld := old[k]
		n, hasNew := cur[k]
		switch {
		case !hadOld:
			out = append(out, change{event: model.EventAdd, cur: n})
		case !hasNew:
			out = append(out, change{event: model.EventDelete, cur: o})
		case !config.SameContent(o, n):
			out = append(out, change{event: model.EventUpdate, old: o, cur: n})
		case o.Spec != n.Spec || o.Source != n.Source:
			out = append(out, change{event: model.EventUpdate, old: o, cur: n, silent: true})
		}
	}
	return out
}

// deliver returns the queue task that applies ch to the delivered view and
// calls the handlers of its kind.
func (c *Controller) deliver(ch change) func() error {
	return func() error {
		key := ch.cur.Key()
		if ch.event == model.EventDelete {
			delete(c.delivered, key)
		} else {
			c.delivered[key] = ch.cur
			c.deliveredPeak = max(c.deliveredPeak, len(c.delivered))
		}
		if ch.silent {
			return nil
		}
		for _, h := range c.handlers[key.Kind] {
			h(ch.old, ch.cur, ch.event)
		}
		return nil
	}
}

// shrinkDelivered copies the delivered view into a map of its size once
// it holds under a quarter of the most it held: a Go map keeps the buckets
// of its largest size, and a folder of 100,000 objects removed would keep
// tens of megabytes of them. Run as a queue task, as deliver is.
func (c *Controller) shrinkDelivered() {
	if c.deliveredPeak > 1024 && len(c.delivered) < c.deliveredPeak/4 {
		// Not maps.Clone, which may copy the table at its old size.
		m := make(map[config.Key]config.Config, len(c.delivered))
		maps.Copy(m, c.delivered)
		c.delivered, c.deliveredPeak = m, len(m)
	}
}

func compareKeys(a, b config.Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func compareConfigs(a, b config.Config) int { return compareKeys(a.Key(), b.Key()) }

// OnBatch registers f, run on the event queue after the events of every
// scan that changed anything, once the tasks their handlers queued (a
// Gateway API conversion) have run too: every change the scan found has
// then reached its handlers. A push debouncer uses it to push a lone edit
// without waiting for more of it.
func (c *Controller) OnBatch(f func()) {
	c.queue.Push(func() error {
		c.batchHandlers = append(c.batchHandlers, f)
		return nil
	})
}

// batchDone is the queue task queued after a scan's events: it queues the
// task telling the batch handlers, which so runs after whatever the
// events' handlers queued.
func (c *Controller) batchDone() error {
	c.shrinkDelivered()
	c.queue.Push(func() error {
		for _, f := range c.batchHandlers {
			f()
		}
		return nil
	})
	return nil
}
