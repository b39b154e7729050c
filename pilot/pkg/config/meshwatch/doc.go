// Package meshwatch feeds a mesh.Holder from the two places istiod reads
// its mesh config: a file (istiod's --meshConfig, Wayfinder's
// --mesh-config), watched as istiod watches it, and the mesh key of the
// istio ConfigMap in the server's own namespace, watched through an
// informer on that one object, as istiod does when it has no file.
//
// The Holder keeps the last good config and tells its OnChange of each
// change (the assembly pushes on it); a Tracker in front of it remembers
// the last refused update and counts refusals, for the debug page and
// the metrics. Neither watcher pushes or translates anything.
package meshwatch
