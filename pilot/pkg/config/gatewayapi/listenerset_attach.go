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
	var out []attachment
	var matched int
	var reason string
	held := false
	why := gw.RouteReasonNotAllowedByListeners
	for _, l := range rec.listeners {
		if p.SectionName != nil && *p.SectionName != l.spec.Name {
			continue
		}
		if p.Port != nil && *p.Port != l.spec.Port {
			continue
		}
		matched++
		if !kindAllowed(l, kind) {
			reason = fmt.Sprintf("listener %s does not allow kind %s (NotAllowedByListeners)", l.spec.Name, kind)
			continue
		}
		ok, err := c.admits(owner, l.spec, ns)
		if err != nil {
			reason = fmt.Sprintf("listener %s: %v (NotAllowedByListeners)", l.spec.Name, err)
			continue
		}
		if !ok {
			reason = fmt.Sprintf("listener %s does not allow routes from namespace %s (NotAllowedByListeners)", l.spec.Name, ns)
			continue
		}
		hosts := intersectHosts(l.spec.Hostname, hostnames)
		if len(hosts) == 0 {
			reason = fmt.Sprintf("no hostname of the route matches listener %s (NoMatchingListenerHostname)", l.spec.Name)
			why = gw.RouteReasonNoMatchingListenerHostname
			continue
		}
		c.st.listener(rec.pseudo, l.spec.Name).attached++
		if l.unserved {
			held = true
			continue
		}
		out = append(out, attachment{listener: l, hosts: hosts})
	}
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
