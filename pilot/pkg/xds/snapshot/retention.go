package snapshot

// What a push keeps for the next one to reuse (the interner's previous
// generation, and the virtual hosts' encodings with it) is needed only
// while the next push is being translated: every lookup that reuses an
// entry moves it into the current generation. Once a push has been
// translated for every connected proxy, the previous generation holds
// only what no proxy is served any more, such as everything a removed
// VirtualService translated to, and the server lets it go (Release). A
// proxy that connects later in the same push is translated from what the
// current generation holds.

// Release drops the previous generation of every type: the resources a
// push before the current one had and the current one did not take over.
func (in *Interner) Release() {
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
