package gatewayapi

import (
	"fmt"
	"strings"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// attachment is one listener a route is bound to, with the hostnames it
// serves there.
type attachment struct {
	listener *listener
	hosts    []string
}

// attach resolves a route's parentRefs to the listeners that accept it.
// It reports, per parentRef, why nothing accepted it.
func (c *converter) attach(kind, src, ns string, parents []gw.ParentReference, hostnames []gw.Hostname) []attachment {
	var out []attachment
	for i, p := range parents {
		field := fmt.Sprintf("spec.parentRefs[%d]", i)
		if isListenerSetRef(p) {
			out = append(out, c.attachListenerSet(kind, src, ns, i, p, hostnames)...)
			continue
		}
		if group, k := string(deref(p.Group, gw.Group(Group))), string(deref(p.Kind, "Gateway")); group != Group || k != "Gateway" {
			c.errorf(src, field+".kind", "parent %s.%s is not supported (only Gateway and ListenerSet); parent skipped", k, group)
			continue
		}
		gwNS := string(deref(p.Namespace, gw.Namespace(ns)))
		ls, ok := c.listeners[gwNS+"/"+string(p.Name)]
		if !ok {
			if c.st.handled[gwNS+"/"+string(p.Name)] {
				c.st.parent(src, i, p, &cond{reason: string(gw.RouteReasonNoMatchingParent),
					message: fmt.Sprintf("Gateway %s/%s has no listener that can be served", gwNS, p.Name)})
			}
			// Not a Gateway of ours, or one without servable listeners:
			// another controller's business, or reported on the Gateway.
			continue
		}
		m := c.matchListeners(kind, ns, p, hostnames, ls, func(l *listener) (bool, error) { return c.namespaceAllowed(l, ns) },
			func(l *listener) *listenerRec { return c.st.listener(l.gateway, l.spec.Name) })
		out = append(out, m.out...)
		matched, held, reason, why := m.matched, m.held, m.reason, m.why
		switch {
		case matched == 0:
			c.errorf(src, field, "Gateway %s/%s has no listener matching sectionName/port (NoMatchingParent); parent skipped", gwNS, p.Name)
			c.st.parent(src, i, p, &cond{reason: string(gw.RouteReasonNoMatchingParent),
				message: fmt.Sprintf("Gateway %s/%s has no listener matching sectionName/port", gwNS, p.Name)})
		case !held && !attachedTo(out, gwNS, string(p.Name)):
			c.errorf(src, field, "not attached to Gateway %s/%s: %s", gwNS, p.Name, reason)
			c.st.parent(src, i, p, &cond{reason: string(why), message: reason})
		default:
			c.st.parent(src, i, p, nil)
		}
	}
	return out
}

// listenerMatch is how the listeners of one parent took a parentRef.
type listenerMatch struct {
	out     []attachment
	matched int  // listeners sectionName and port picked
	held    bool // attached to a listener that is not served (holdUnresolved)
	reason  string
	why     gw.RouteConditionReason
}

// matchListeners attaches a route to those of a parent's listeners ls
// that parentRef p picks (sectionName, port) and that admit it: its kind,
// its namespace (admits: allowedRoutes, relative to the Gateway's or the
// ListenerSet's namespace) and its hostnames. rec is where each listener
// counts its attached routes. reason and why say why the last refusing
// listener refused.
func (c *converter) matchListeners(kind, ns string, p gw.ParentReference, hostnames []gw.Hostname, ls []*listener,
	admits func(*listener) (bool, error), rec func(*listener) *listenerRec) listenerMatch {
	m := listenerMatch{why: gw.RouteReasonNotAllowedByListeners}
	for _, l := range ls {
		if p.SectionName != nil && *p.SectionName != l.spec.Name {
			continue
		}
		if p.Port != nil && *p.Port != l.spec.Port {
			continue
		}
		m.matched++
		if !kindAllowed(l, kind) {
			m.reason = fmt.Sprintf("listener %s does not allow kind %s (NotAllowedByListeners)", l.spec.Name, kind)
			continue
		}
		ok, err := admits(l)
		if err != nil {
			m.reason = fmt.Sprintf("listener %s: %v (NotAllowedByListeners)", l.spec.Name, err)
			continue
		}
		if !ok {
			m.reason = fmt.Sprintf("listener %s does not allow routes from namespace %s (NotAllowedByListeners)", l.spec.Name, ns)
			continue
		}
		hosts := intersectHosts(l.spec.Hostname, hostnames)
		if len(hosts) == 0 {
			m.reason = fmt.Sprintf("no hostname of the route matches listener %s (NoMatchingListenerHostname)", l.spec.Name)
			m.why = gw.RouteReasonNoMatchingListenerHostname
			continue
		}
		rec(l).attached++
		if l.unserved {
			m.held = true
			continue
		}
		m.out = append(m.out, attachment{listener: l, hosts: hosts})
	}
	return m
}

func attachedTo(as []attachment, ns, name string) bool {
	for _, a := range as {
		if a.listener.gateway.Namespace == ns && a.listener.gateway.Name == name {
			return true
		}
	}
	return false
}

// intersectHosts narrows a route's hostnames to a listener's. No listener
// hostname accepts every route hostname; no route hostname takes the
// listener's (or "*"). A wildcard on either side matches one or more
// labels in front of its suffix, and the narrower name is kept.
func intersectHosts(listenerHost *gw.Hostname, routeHosts []gw.Hostname) []string {
	lh := ""
	if listenerHost != nil {
		lh = strings.ToLower(string(*listenerHost))
	}
	if len(routeHosts) == 0 {
		if lh == "" {
			return []string{"*"}
		}
		return []string{lh}
	}
	var out []string
	seen := map[string]bool{}
	for _, h := range routeHosts {
		rh := strings.ToLower(string(h))
		var got string
		switch {
		case lh == "" || lh == rh:
			got = rh
		case wildcardMatches(lh, rh):
			got = rh
		case wildcardMatches(rh, lh):
			got = lh
		}
		if got != "" && !seen[got] {
			seen[got] = true
			out = append(out, got)
		}
	}
	return out
}

// wildcardMatches reports whether pattern "*.suffix" covers host, which
// must have at least one more label (host may itself be a narrower
// wildcard).
func wildcardMatches(pattern, host string) bool {
	if !strings.HasPrefix(pattern, "*.") {
		return false
	}
	suffix := pattern[1:] // ".suffix"
	return strings.HasSuffix(host, suffix) && len(host) > len(suffix) && host != pattern
}
