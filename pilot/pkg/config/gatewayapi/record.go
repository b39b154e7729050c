package gatewayapi

import (
	"fmt"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// recorder collects, while converting, what the status of each Gateway
// listener and each route parentRef is, so that status (status.go) is
// computed from the very decisions conversion took, not re-derived.
type recorder struct {
	// handled Gateways (of a handled class), by "namespace/name".
	handled map[string]bool
	// listeners by "namespace/name" of the Gateway, then listener name.
	listeners map[string]map[gw.SectionName]*listenerRec
	// parents by route Source, one per parentRef index; nil where the
	// parent is not ours.
	parents map[string][]*parentRec
	// refs is the first backend a route could not resolve, by Source.
	refs map[string]*cond
	// secrets are the Secrets of other namespaces listeners use by a
	// ReferenceGrant.
	secrets SecretGrants
	// referenced are the Secrets and ConfigMaps looked up (referenced.go).
	referenced Referenced
	// rejected are the handled Gateways not accepted as a whole, by
	// "namespace/name" (params.go).
	rejected map[string]*cond
	// unresolved are the handled Gateways whose own references (not
	// their listeners') did not resolve, by "namespace/name"
	// (backendclient.go).
	unresolved map[string]*cond
	// btls are the BackendTLSPolicies' outcomes (backendtls.go).
	btls map[string]*btlsRec // by "namespace/name"
	// sets are the ListenerSets' outcomes (listenerset.go).
	sets setRecords
}

// cond is a condition's outcome: a reason and a message.
type cond struct {
	reason  string
	message string
}

type listenerRec struct {
	// accepted, resolved: nil when true.
	accepted, resolved *cond
	programmed         bool
	attached           int32
}

type parentRec struct {
	ref      gw.ParentReference
	accepted *cond // nil when accepted
}

// statusOnly runs resolve, which resolves the backends of a route that
// no listener accepted, only to record its ResolvedRefs, when the route
// has a parent of ours to report it on; nothing is reported as an error
// (the route is already reported as not attached).
func (c *converter) statusOnly(src string, resolve func()) {
	if len(c.st.parents[src]) == 0 {
		return
	}
	c.quiet = true
	defer func() { c.quiet = false }()
	resolve()
}

func newRecorder() *recorder {
	return &recorder{handled: map[string]bool{}, listeners: map[string]map[gw.SectionName]*listenerRec{},
		parents: map[string][]*parentRec{}, refs: map[string]*cond{}}
}

func (r *recorder) listener(g *gw.Gateway, name gw.SectionName) *listenerRec {
	key := g.Namespace + "/" + g.Name
	m := r.listeners[key]
	if m == nil {
		m = map[gw.SectionName]*listenerRec{}
		r.listeners[key] = m
	}
	l := m[name]
	if l == nil {
		l = &listenerRec{}
		m[name] = l
	}
	return l
}

// listenerNotAccepted records why a listener is not accepted.
func (r *recorder) listenerNotAccepted(g *gw.Gateway, l gw.Listener, reason gw.ListenerConditionReason, format string, args ...any) {
	r.listener(g, l.Name).accepted = &cond{reason: string(reason), message: fmt.Sprintf(format, args...)}
}

// listenerUnresolved records why a listener's references do not resolve.
func (r *recorder) listenerUnresolved(g *gw.Gateway, l gw.Listener, reason gw.ListenerConditionReason, format string, args ...any) {
	rec := r.listener(g, l.Name)
	if rec.resolved == nil {
		rec.resolved = &cond{reason: string(reason), message: fmt.Sprintf(format, args...)}
	}
}

// refUnresolved records the first backend of a route that does not
// resolve.
func (r *recorder) refUnresolved(src string, reason gw.RouteConditionReason, format string, args ...any) {
	if r.refs[src] == nil {
		r.refs[src] = &cond{reason: string(reason), message: fmt.Sprintf(format, args...)}
	}
}

// parent records the outcome of parentRef i of a route; accepted is nil
// when the route attached there.
func (r *recorder) parent(src string, i int, ref gw.ParentReference, accepted *cond) {
	ps := r.parents[src]
	for len(ps) <= i {
		ps = append(ps, nil)
	}
	ps[i] = &parentRec{ref: ref, accepted: accepted}
	r.parents[src] = ps
}
