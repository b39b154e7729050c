package xds

import "github.com/wayfinder-dev/wayfinder/pilot/pkg/model"

// What a push keeps for the next one to reuse (the interner's and the
// route cache's previous generations) is needed only while the next push
// is being translated: every lookup that reuses an entry moves it into
// the current generation. Once a push has been translated for every
// connected proxy, the previous generation holds only what no proxy is
// served any more, such as everything a removed VirtualService
// translated to, and is let go. A proxy that connects later in the same
// push is translated from what the current generation holds.

// cacheReleaser is a Generator that keeps translations across pushes.
type cacheReleaser interface {
	// Release lets go of what only pushes before push used.
	Release(push *model.PushContext)
}

// Release lets go of the route cache's previous generation.
func (g CoreGenerator) Release(push *model.PushContext) { g.Caches.Routes.Release(push) }

// releaseOldPushes lets go of what only pushes before st used, once st
// has been translated for every connected proxy. An endpoints-only push
// translated no routes: the route cache keeps the last full push's.
func (s *DiscoveryServer) releaseOldPushes(st *pushState) {
	s.intern.release()
	if r, ok := s.gen.(cacheReleaser); ok && !st.endpointsOnly {
		r.Release(st.push)
	}
}

// release drops the previous generation of every type: the resources a
// push before the current one had and the current one did not take over.
func (in *interner) release() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for t := range in.prev {
		in.prev[t] = nil
	}
	in.vhosts.release()
}

// release drops the previous generation's encodings.
func (v *vhostBytes) release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.prev = nil
}
