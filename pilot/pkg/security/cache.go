package security

import (
	"sync"
	"time"
)

// ttlCache maps keys to values until an expiry, holding at most max
// entries: when full, expired entries are dropped first, then the entry
// expiring soonest, so a flood of distinct tokens costs bounded memory.
type ttlCache[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](max int) *ttlCache[V] {
	return &ttlCache[V]{max: max, entries: map[string]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		if ok {
			delete(c.entries, key)
		}
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, v V, expires, now time.Time) {
	if !now.Before(expires) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.entries[key] = ttlEntry[V]{value: v, expires: expires}
}

func (c *ttlCache[V]) evictLocked(now time.Time) {
	var soonest string
	var at time.Time
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
			continue
		}
		if soonest == "" || e.expires.Before(at) {
			soonest, at = k, e.expires
		}
	}
	if len(c.entries) >= c.max && soonest != "" {
		delete(c.entries, soonest)
	}
}

func (c *ttlCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
