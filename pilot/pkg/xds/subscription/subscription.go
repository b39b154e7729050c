package subscription

import (
	"maps"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
)

// wildcardName is the explicit wildcard of the xDS protocol.
const wildcardName = "*"

// Subscription is what one stream subscribes to of one type, and (delta)
// the versions the client holds. The discovery server's cache reads it;
// the stream's goroutine owns it, and changes it only after cancelling the
// type's watch under the server's lock, so a reader never sees it change.
//
// The maps are shared where they can be: a name set decoded from a list
// the codec shares (every gateway of a group names the same clusters) is
// built once for all streams naming that list (wire.NameSet), and a delta
// client holding exactly a view's set of a type holds that set's version
// map. A shared map is never changed: it is copied first (ownNames,
// ownKnown). go-control-plane's subscription built a map of every name for
// each request of each stream and each ACK, and a version map per stream
// and push: at 1,000 clusters and 500 gateways those were most of the
// server's live heap.
type Subscription struct {
	// wildcard: every resource of the type (explicit "*", or legacy: the
	// first request named nothing, for types that allow it).
	wildcard bool
	// legacy: the stream has named nothing yet and the type allows
	// legacy wildcard, so an empty request keeps it wildcard.
	legacy bool

	names       map[string]struct{}
	namesShared bool
	// nameBytes is what names holds as the byte limits count it (see
	// package limits): its names' lengths plus limits.NameOverheadBytes each.
	nameBytes int64
	// list is the SotW request list names came from, and listShape its
	// size: an ACK carries the same (shared) list and is not measured
	// again.
	list      []string
	listShape limits.ListShape

	// known is the delta client's resource versions (name -> version, ""
	// for a resource it must be sent again); unused by SotW.
	known       map[string]string
	knownShared bool
}

// SubscribedResources returns the names explicitly subscribed to.
func (s *Subscription) SubscribedResources() map[string]struct{} { return s.names }

// IsWildcard reports whether the subscription is wildcard.
func (s *Subscription) IsWildcard() bool { return s.wildcard }

// ReturnedResources returns the versions the (delta) client holds.
func (s *Subscription) ReturnedResources() map[string]string { return s.known }

// ReturnedShared reports whether ReturnedResources is a view's set's
// shared version map (see SetKnown).
func (s *Subscription) ReturnedShared() bool { return s.knownShared }

// List is the SotW request list the names came from, and ListShape its
// size: an ACK carries the same (shared) list and is not measured again.
func (s *Subscription) List() []string { return s.list }

// ListShape is List's size as package limits measures it.
func (s *Subscription) ListShape() *limits.ListShape { return &s.listShape }

// Size is how many names are subscribed to and what they count for the
// byte limits (package limits).
func (s *Subscription) Size() (names int, bytes int64) { return len(s.names), s.nameBytes }

// subscribedSet returns the set of names in list without "*", and whether list
// names "*": shared when the codec shared the list.
func subscribedSet(list []string) (set map[string]struct{}, wildcard, shared bool) {
	if set, wildcard, ok := wire.NameSet(list); ok {
		return set, wildcard, true
	}
	set = make(map[string]struct{}, len(list))
	for _, n := range list {
		if n == wildcardName {
			wildcard = true
			continue
		}
		set[n] = struct{}{}
	}
	return set, wildcard, false
}

// NewSotw is a SotW stream's first request of a type.
func NewSotw(list []string, allowLegacy bool) *Subscription {
	s := &Subscription{legacy: allowLegacy, wildcard: allowLegacy && len(list) == 0, names: map[string]struct{}{}}
	s.SetSotw(list)
	return s
}

// SetSotw replaces the subscription with a SotW request's names: each
// request names all it wants. In legacy mode an empty list leaves the
// stream wildcard; any name (or "*") ends legacy mode.
func (s *Subscription) SetSotw(list []string) {
	if s.legacy {
		if len(list) == 0 {
			return
		}
		s.legacy = false
	}
	s.names, s.wildcard, s.namesShared = subscribedSet(list)
	if !snapshot.SameNameList(list, s.list) {
		s.list, s.listShape = list, limits.ShapeOf(list)
	}
	s.nameBytes = s.listShape.Bytes
}

// NewDelta is a delta stream's first request of a type, with
// the versions the client says it holds (initial_resource_versions).
func NewDelta(subscribe, unsubscribe []string, initial map[string]string, allowLegacy bool) *Subscription {
	s := &Subscription{legacy: allowLegacy, wildcard: allowLegacy && len(subscribe) == 0, known: initial}
	if s.known == nil {
		s.known = map[string]string{}
	}
	if len(subscribe) == 0 {
		s.names = map[string]struct{}{}
		s.UpdateDelta(nil, unsubscribe)
		return s
	}
	// The common first request: the whole list at once, its set shared.
	// Naming anything ends legacy wildcard; "*" subscribes to everything.
	s.legacy = false
	s.names, s.wildcard, s.namesShared = subscribedSet(subscribe)
	for n := range s.names {
		s.nameBytes += nameBytes(n)
	}
	s.unsubscribe(unsubscribe)
	return s
}

// nameBytes is what one subscribed name counts for the byte limits.
func nameBytes(n string) int64 { return int64(len(n)) + limits.NameOverheadBytes }

// UpdateDelta applies a delta request's subscribe and unsubscribe lists.
// In legacy mode a request subscribing to nothing leaves the stream
// wildcard; subscribing to anything ends legacy mode, and the stream stays
// wildcard until "*" is unsubscribed.
func (s *Subscription) UpdateDelta(subscribe, unsubscribe []string) {
	if s.legacy {
		if len(subscribe) == 0 {
			return
		}
		s.legacy = false
	}
	if len(subscribe) > 0 {
		s.ownNames()
		for _, n := range subscribe {
			if n == wildcardName {
				s.wildcard = true
				continue
			}
			if _, ok := s.names[n]; !ok {
				s.names[n] = struct{}{}
				s.nameBytes += nameBytes(n)
			}
		}
	}
	s.unsubscribe(unsubscribe)
}

// unsubscribe removes names. A name unsubscribed from a wildcard stream
// is marked for sending again (version ""), so the next response says
// whether it still exists; otherwise the client is taken to no longer
// hold it, so subscribing again gets it sent.
func (s *Subscription) unsubscribe(unsubscribe []string) {
	if len(unsubscribe) == 0 {
		return
	}
	s.ownNames()
	s.ownKnown()
	for _, n := range unsubscribe {
		if n == wildcardName {
			s.wildcard = false
			continue
		}
		_, held := s.names[n]
		if held && s.wildcard {
			s.known[n] = ""
		} else {
			delete(s.known, n)
		}
		if held {
			delete(s.names, n)
			s.nameBytes -= nameBytes(n)
		}
	}
}

// SetKnown records the versions the client holds after a response: shared
// when they are exactly a view's set's version map.
func (s *Subscription) SetKnown(next map[string]string, shared bool) {
	s.known, s.knownShared = next, shared
}

func (s *Subscription) ownNames() {
	if s.namesShared {
		s.names, s.namesShared = maps.Clone(s.names), false
	}
	if s.names == nil {
		s.names = map[string]struct{}{}
	}
}

func (s *Subscription) ownKnown() {
	if s.knownShared {
		s.known, s.knownShared = maps.Clone(s.known), false
	}
	if s.known == nil {
		s.known = map[string]string{}
	}
}
