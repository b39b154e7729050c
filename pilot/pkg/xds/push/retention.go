package push

import "github.com/wayfinder-dev/wayfinder/pilot/pkg/model"

// What a push keeps for the next one to reuse (the interner's and the
// route cache's previous generations) is needed only while the next push
// is being translated: every lookup that reuses an entry moves it into
// the current generation. Once a push has been translated for every
// connected proxy, the previous generation holds only what no proxy is
// served any more, such as everything a removed VirtualService
// translated to, and is let go. A proxy that connects later in the same
// push is translated from what the current generation holds.

// cacheReleaser is a core.Generator that keeps translations across pushes.
type cacheReleaser interface {
	// Release lets go of what only pushes before push used.
	Release(push *model.PushContext)
}

// Release lets go of what only pushes before st used, once st has been
// translated for every connected proxy. An endpoints-only push translated
// no routes: the route cache keeps the last full push's. The caller holds
// the push lock.
func (t *Translator) Release(st *State) {
	t.intern.Release()
	if r, ok := t.gen.(cacheReleaser); ok && !st.EndpointsOnly {
		r.Release(st.Push)
	}
}
