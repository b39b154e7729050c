package file

import (
	"context"
	"crypto/sha256"
	"slices"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Files are written in steps: `cat >`, many editors and config tools
// truncate a file and then write it, a delete and recreate leaves a gap,
// and a scan can land in between. A changed (or removed) file is therefore
// taken in only once a scan has seen the same content (or its absence)
// for the settle window; until then it keeps serving what it served. A
// file that became empty, which a failed save leaves behind, waits longer
// still (the empty grace), and its objects are then removed with a log line
// naming them.
const (
	defaultSettle     = 100 * time.Millisecond
	defaultEmptyGrace = time.Second
)

// pendingChange is content seen in a file but not yet accepted.
type pendingChange struct {
	sum     [sha256.Size]byte
	missing bool
	// since is when this content was first seen.
	since time.Time
}

// settle records that the file now has content sum (or is missing) and
// reports since when, and whether that has lasted the settle window.
func (st *fileState) settle(sum [sha256.Size]byte, missing bool, now time.Time, window time.Duration) (time.Time, bool) {
	if st.pending == nil || st.pending.sum != sum || st.pending.missing != missing {
		st.pending = &pendingChange{sum: sum, missing: missing, since: now}
	}
	since := st.pending.since
	return since, now.Sub(since) >= window
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// setWake asks for a scan at t (zero: none needed). Must be called with
// scanMu held.
func (c *Controller) setWake(t time.Time) {
	c.wakeMu.Lock()
	c.wakeAt = t
	c.wakeMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// runSettle looks again at the files with pending changes when one is
// due, until ctx is done.
func (c *Controller) runSettle(ctx context.Context, settle func()) {
	timer := c.clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
			c.wakeMu.Lock()
			at := c.wakeAt
			c.wakeMu.Unlock()
			if at.IsZero() {
				continue
			}
			if d := at.Sub(c.clock.Now()); d > 0 {
				// A firing not yet received is dropped, or the channel
				// would still hold it after the reset: a timer whose
				// channel holds one value blocks the next firing (the
				// test clock then holds its lock while this loop waits
				// on it for Now, and both stop).
				if !timer.Stop() {
					select {
					case <-timer.C():
					default:
					}
				}
				timer.Reset(d)
				// The clock may have passed at before the timer was set.
				if c.clock.Now().Before(at) {
					continue
				}
			}
			settle()
		case <-timer.C():
			settle()
		}
	}
}

// stampFresh gives each object of a newly parsed file its first-seen time,
// kept from the file's previous version when the key was there. A key new
// to its file but moved from a file that no longer defines it keeps its
// old stamp too, so moving an object between files does not make it a
// newcomer. An object whose manifest sets metadata.creationTimestamp keeps
// that as its creation time; the others are created when first seen.
// Must be called with scanMu held.
func (c *Controller) stampFresh(files map[string]*fileState) {
	// The stamps of keys served now whose definition disappeared.
	moved := map[config.Key]time.Time{}
	for p, st := range c.files {
		cur := files[p]
		if cur == st {
			// Unchanged state: its seen keys are its objects' keys.
			continue
		}
		var held map[config.Key]bool
		if cur != nil {
			// A set, not a search per key: a file of 5,000 objects made
			// every rescan quadratic (1.1 s at 5,000 services).
			held = make(map[config.Key]bool, len(cur.objects))
			for _, obj := range cur.objects {
				held[obj.Key()] = true
			}
		}
		for key, ts := range st.seen.all() {
			if !held[key] {
				if old, ok := moved[key]; !ok || ts.Before(old) {
					moved[key] = ts
				}
			}
		}
	}
	// A key another file still holds is not a move: the holder keeps its
	// place.
	if len(moved) > 0 {
		for _, st := range files {
			for key := range st.seen.all() {
				delete(moved, key)
			}
		}
	}
	for _, p := range freshPaths(files) {
		st := files[p]
		st.fresh = false
		for i := range st.objects {
			obj := &st.objects[i]
			key := obj.Key()
			ts, ok := st.seen.get(key)
			if !ok {
				if ts, ok = moved[key]; ok {
					delete(moved, key)
				} else {
					ts = c.stamp()
				}
				st.seen.set(key, ts)
			}
			if obj.CreationTimestamp.IsZero() {
				obj.CreationTimestamp = ts
			}
		}
	}
}

// freshPaths returns the paths of the states parsed by this scan, sorted.
func freshPaths(files map[string]*fileState) []string {
	var out []string
	for p, st := range files {
		if st.fresh {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// stamp returns the first-seen time of objects new in this scan: now, but
// always after the previous scan's, so a later scan's objects are newer
// even on a coarse or fake clock. Objects new in one scan share a stamp,
// as objects created within one second do in Kubernetes: the push context
// then orders them by namespace and name, and duplicate names by file path
// and document, so a restart orders everything as a fresh start always
// did. Must be called with scanMu held.
func (c *Controller) stamp() time.Time {
	if !c.scanStamp.IsZero() {
		return c.scanStamp
	}
	ts := c.clock.Now().UTC()
	if !ts.After(c.lastStamp) {
		ts = c.lastStamp.Add(time.Nanosecond)
	}
	c.lastStamp, c.scanStamp = ts, ts
	return ts
}
