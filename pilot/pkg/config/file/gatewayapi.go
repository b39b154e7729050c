package file

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// gatewayFileState is what one file contributes of Kubernetes Gateway API
// objects. They follow the file's rules for Istio config (a file that does
// not parse keeps what it had, an emptied one keeps it for the grace
// period, a name defined twice stays with the definition seen first), but
// are not validated here: the Gateway API source converts them and
// reports, per object and field, what it cannot serve.
type gatewayFileState struct {
	objects []manifest.GatewayAPIObject
	// seen is when each key was first seen in the file (the object's
	// creationTimestamp when the manifest gives none: the Gateway API's
	// oldest-route-first rule then follows the order objects appeared).
	seen map[string]time.Time
}

// keepGatewayPrev reports whether a file's previous Gateway API objects
// stay, as its Istio objects do when a document does not parse.
func keepGatewayPrev(parseErrs []*config.Error, prev *fileState) bool {
	return len(parseErrs) > 0 && prev != nil
}

// newGatewayFileState is the state of freshly parsed objects, carrying
// over the first-seen stamps of prev.
func newGatewayFileState(objs []manifest.GatewayAPIObject, prev *fileState, keepPrev bool) gatewayFileState {
	if keepPrev {
		return prev.gateway
	}
	st := gatewayFileState{objects: objs, seen: map[string]time.Time{}}
	if prev != nil {
		for _, o := range objs {
			if ts, ok := prev.gateway.seen[o.Key()]; ok {
				st.seen[o.Key()] = ts
			}
		}
	}
	return st
}

// stampGatewayAPI gives every newly seen Gateway API object its
// first-seen stamp, and that as creationTimestamp when it has none. The
// objects are fresh from the parser, not yet shared.
func (c *Controller) stampGatewayAPI(files map[string]*fileState) {
	for _, p := range freshPaths(files) {
		st := files[p]
		for _, o := range st.gateway.objects {
			ts, ok := st.gateway.seen[o.Key()]
			if !ok {
				ts = c.stamp()
				st.gateway.seen[o.Key()] = ts
			}
			if o.Object.GetCreationTimestamp().Time.IsZero() {
				o.Object.SetCreationTimestamp(metav1.NewTime(ts))
			}
		}
	}
}

// resolveGatewayAPI merges the files' Gateway API objects, sorted by key:
// where several definitions share a key the one seen first is used (ties:
// path order, document order), and the others are reported.
func resolveGatewayAPI(files map[string]*fileState) ([]manifest.GatewayAPIObject, []*config.Error) {
	used := map[string]manifest.GatewayAPIObject{}
	seen := map[string]time.Time{}
	paths := slices.Sorted(maps.Keys(files))
	for _, p := range paths {
		st := files[p].gateway
		for _, o := range st.objects {
			ts := st.seen[o.Key()]
			if first, dup := seen[o.Key()]; dup && !ts.Before(first) {
				continue
			}
			used[o.Key()], seen[o.Key()] = o, ts
		}
	}
	var problems []*config.Error
	for _, p := range paths {
		for _, o := range files[p].gateway.objects {
			if u := used[o.Key()]; u.Source != o.Source {
				problems = append(problems, &config.Error{Source: o.Source,
					Key: config.Key{Namespace: o.Object.GetNamespace(), Name: o.Object.GetName()},
					Message: fmt.Sprintf("%s: duplicate of the definition in %s, which was there first and is used; this one is ignored",
						o.Key(), u.Source)})
			}
		}
	}
	out := slices.Collect(maps.Values(used))
	slices.SortFunc(out, func(a, b manifest.GatewayAPIObject) int { return strings.Compare(a.Key(), b.Key()) })
	return out, problems
}

// setGatewayAPI stores the objects in force and reports whether they
// differ from those before (content or source). Called with mu held.
func (c *Controller) setGatewayAPI(objs []manifest.GatewayAPIObject) bool {
	same := slices.EqualFunc(c.gatewayAPI, objs, func(a, b manifest.GatewayAPIObject) bool {
		return a.Key() == b.Key() && a.Sum == b.Sum && a.Source == b.Source &&
			a.Object.GetCreationTimestamp().Time.Equal(b.Object.GetCreationTimestamp().Time)
	})
	c.gatewayAPI = objs
	return !same
}

// GatewayAPIObjects returns the Gateway API objects in force, sorted by
// kind, namespace and name. They are shared: do not modify them.
func (c *Controller) GatewayAPIObjects() []manifest.GatewayAPIObject {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.gatewayAPI)
}

// OnGatewayAPIChange registers f, run on the event queue after every scan
// that changed the Gateway API objects, ordered with the other events. It
// is not run for what is there already: read GatewayAPIObjects.
func (c *Controller) OnGatewayAPIChange(f func()) {
	c.queue.Push(func() error {
		c.gatewayHandlers = append(c.gatewayHandlers, f)
		return nil
	})
}

// deliverGatewayAPI is the queue task telling the Gateway API handlers.
func (c *Controller) deliverGatewayAPI() error {
	for _, f := range c.gatewayHandlers {
		f()
	}
	return nil
}
