package gatewayapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// attachListenerSet resolves parentRef i of a route, which names a
// ListenerSet, to the set's listeners that accept it, as attach does for a
// Gateway: sectionName and port pick listeners, whose kinds, namespaces
// (allowedRoutes, Same meaning the ListenerSet's namespace) and hostnames
// must admit the route. A ListenerSet whose parent is not a handled
// Gateway is not ours: no status.
func (c *converter) attachListenerSet(kind, src, ns string, i int, p gw.ParentReference, hostnames []gw.Hostname) []attachment {
	field := fmt.Sprintf("spec.parentRefs[%d]", i)
	setNS := string(deref(p.Namespace, gw.Namespace(ns)))
	rec := c.st.sets.byKey[setNS+"/"+string(p.Name)]
	if rec == nil {
		return nil
	}
	if rec.rejected != nil {
		msg := fmt.Sprintf("ListenerSet %s/%s is not attached to its Gateway: %s", setNS, p.Name, rec.rejected.message)
		c.errorf(src, field, "%s; parent skipped", msg)
		c.st.parent(src, i, p, &cond{reason: string(gw.RouteReasonNoMatchingParent), message: msg})
		return nil
	}
	// allowedRoutes Same is relative to the ListenerSet's namespace.
	owner := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: setNS, Name: string(p.Name)}}
	m := c.matchListeners(kind, ns, p, hostnames, rec.listeners, func(l *listener) (bool, error) { return c.admits(owner, l.spec, ns) },
		func(l *listener) *listenerRec { return c.st.listener(rec.pseudo, l.spec.Name) })
	out, matched, held, reason, why := m.out, m.matched, m.held, m.reason, m.why
	switch {
	case matched == 0:
		c.errorf(src, field, "ListenerSet %s/%s has no listener matching sectionName/port (NoMatchingParent); parent skipped", setNS, p.Name)
		c.st.parent(src, i, p, &cond{reason: string(gw.RouteReasonNoMatchingParent),
			message: fmt.Sprintf("ListenerSet %s/%s has no listener matching sectionName/port", setNS, p.Name)})
	case !held && len(out) == 0:
		c.errorf(src, field, "not attached to ListenerSet %s/%s: %s", setNS, p.Name, reason)
		c.st.parent(src, i, p, &cond{reason: string(why), message: reason})
	default:
		c.st.parent(src, i, p, nil)
	}
	return out
}
