// Package subscription keeps what one xDS stream subscribes to of one type
// (the names, or wildcard) and, for delta, the versions the client holds,
// by the protocol's rules for both state of the world and delta: explicit
// and legacy wildcard, subscribe and unsubscribe lists, and names counted
// for the limits of package limits.
//
// Its maps are shared between streams where they can be (a name set
// decoded once for every stream naming the same list, a view's version
// map for every delta client holding exactly that set) and copied before
// they are changed: per-stream copies were most of the server's live heap
// at a thousand clusters and five hundred gateways.
package subscription
