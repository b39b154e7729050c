package gatewayapi

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// namespaceNameLabel is the label Kubernetes sets on every Namespace to its
// own name. A selector may name it; like istiod (toNamespaceSet), it is
// assumed present even where an older cluster did not set it.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// allowedRoutes returns a listener's allowedRoutes.namespaces: From
// (default Same) and its Selector.
func allowedRoutes(l gw.Listener) (gw.FromNamespaces, *metav1.LabelSelector) {
	if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		return deref(ar.Namespaces.From, gw.NamespacesFromSame), ar.Namespaces.Selector
	}
	return gw.NamespacesFromSame, nil
}

// namespaceLabels returns the labels a selector is matched against for
// namespace ns: its own, with namespaceNameLabel set. They are built once
// per conversion: every Selector listener reads every namespace's.
func (c *converter) namespaceLabels(ns string) labels.Set {
	if set, ok := c.nsLabels[ns]; ok {
		return set
	}
	var own map[string]string
	if c.in.Namespaces != nil {
		own = c.in.Namespaces(ns)
	}
	out := make(labels.Set, len(own)+1)
	for k, v := range own {
		out[k] = v
	}
	out[namespaceNameLabel] = ns
	if c.nsLabels == nil {
		c.nsLabels = map[string]labels.Set{}
	}
	c.nsLabels[ns] = out
	return out
}

// admits reports whether routes of namespace ns may attach to listener l
// of Gateway g (allowedRoutes.namespaces From: All, Same, or Selector
// matched against the namespace's labels).
func (c *converter) admits(g *gw.Gateway, l gw.Listener, ns string) (bool, error) {
	from, sel := allowedRoutes(l)
	switch from {
	case gw.NamespacesFromAll:
		return true, nil
	case gw.NamespacesFromSame:
		return ns == g.Namespace, nil
	case gw.NamespacesFromSelector:
		if sel == nil {
			return false, fmt.Errorf("allowedRoutes.namespaces.from is Selector but there is no selector")
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, err
		}
		return s.Matches(c.namespaceLabels(ns)), nil
	}
	return false, nil
}

// namespaceAllowed reports whether a route in namespace ns may attach to l.
func (c *converter) namespaceAllowed(l *listener, ns string) (bool, error) {
	return c.admits(l.gateway, l.spec, ns)
}

// serverHosts writes the hosts of a listener's Istio server: host once per
// namespace whose routes the listener admits, "NAMESPACE/host" ("*/host"
// for All), as istiod 1.29 does (conversion.go buildHostnameMatch and
// namespacesFromSelector). A bare host would let a VirtualService of any
// namespace that names the generated Gateway bind to the listener, and be
// served with its certificate, whatever allowedRoutes say.
//
// The Gateway's own namespace is always among them, also when a Selector
// does not match it: the VirtualServices the conversion generates (the
// attached routes of every admitted namespace, merged per hostname) live
// there. istiod generates them in each route's namespace instead, so where
// a Selector leaves out the Gateway's namespace, istiod refuses Istio
// VirtualServices of that namespace and Wayfinder admits them. A selector
// that is missing or does not parse admits no other namespace (istiod
// admits all when it is missing); its routes are refused at attachment
// too.
func (c *converter) serverHosts(g *gw.Gateway, l gw.Listener, host string) []string {
	var namespaces []string
	switch from, sel := allowedRoutes(l); from {
	case gw.NamespacesFromAll:
		namespaces = []string{"*"}
	case gw.NamespacesFromSelector:
		namespaces = []string{g.Namespace}
		if sel == nil || c.in.NamespaceNames == nil {
			break
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			break
		}
		for _, ns := range c.in.NamespaceNames() {
			if ns != "" && ns != g.Namespace && s.Matches(c.namespaceLabels(ns)) {
				namespaces = append(namespaces, ns)
			}
		}
		slices.Sort(namespaces)
		namespaces = slices.Compact(namespaces)
	default: // Same, and values this version does not know (they admit nothing else)
		namespaces = []string{g.Namespace}
	}
	out := make([]string, len(namespaces))
	for i, ns := range namespaces {
		out[i] = ns + "/" + host
	}
	return out
}
