package gatewayapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// A ListenerSet (gateway.networking.k8s.io/v1) adds listeners to a Gateway
// that allows it (spec.allowedListeners; None by default). Its listeners
// are served by the parent Gateway's proxies, so their Istio Gateways and
// VirtualServices are generated in the parent's namespace, selecting the
// parent's proxies, as the Gateway's own listeners are; what is relative to
// the ListenerSet is relative to its namespace: allowedRoutes Same, the
// Secrets of its certificateRefs (another namespace needs a ReferenceGrant
// from ListenerSets), and the routes that name it as a parent. Its Secrets
// are bound (SecretGrants) to the parent Gateway's proxies only; a Secret
// of the ListenerSet's namespace is, from the parent's namespace, one of
// another namespace, and lent to that listener alone.
//
// Merging follows the specification: the parent's own listeners first,
// then the ListenerSets oldest first, then by namespace/name. A listener
// that shares a port with an earlier one of another protocol (or TLS
// termination) is refused with ProtocolConflict; one with the same port,
// protocol and hostname with HostnameConflict (Accepted False, Programmed
// False, Conflicted True) and is not served. The parent's own listeners
// always win: a ListenerSet never changes their status. Listeners of one
// ListenerSet may share names with the parent's or another set's; routes
// reach them through a parentRef of kind ListenerSet.

// setRecords are the ListenerSets conversion looked at: those whose
// parentRef names a handled Gateway.
type setRecords struct {
	byKey    map[string]*setRec      // by "namespace/name" of the ListenerSet
	byPseudo map[*gw.Gateway]*setRec // by the set's stand-in Gateway
	order    []*setRec               // merge order
}

// setRec is what conversion decided for one ListenerSet.
type setRec struct {
	set    *gw.ListenerSet
	parent *gw.Gateway
	// pseudo stands in for the set where the Gateway listener code
	// (server, certificate, the recorder's listener status) takes a
	// Gateway: the set's namespace, generation and a name no Gateway can
	// have ("ListenerSet:NAME"), so its records never mix with a Gateway's.
	pseudo *gw.Gateway
	// rejected says why the set as a whole is not attached (NotAllowed,
	// ParentNotAccepted); nil when it is.
	rejected *cond
	// conflicts are its listeners that lost to an earlier one.
	conflicts map[gw.SectionName]cond
	// listeners routes may attach to (served, or held unserved).
	listeners []*listener
}

func (r *recorder) setOf(g *gw.Gateway) *setRec {
	if r.sets.byPseudo == nil {
		return nil
	}
	return r.sets.byPseudo[g]
}

func (s *setRecords) add(ls *gw.ListenerSet, parent *gw.Gateway) *setRec {
	if s.byKey == nil {
		s.byKey, s.byPseudo = map[string]*setRec{}, map[*gw.Gateway]*setRec{}
	}
	pseudo := &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ls.Namespace, Name: "ListenerSet:" + ls.Name,
			Generation: ls.Generation, CreationTimestamp: ls.CreationTimestamp},
		// The parent's class and Gateway-wide TLS settings apply to every
		// listener merged onto it.
		Spec: gw.GatewaySpec{GatewayClassName: parent.Spec.GatewayClassName, TLS: parent.Spec.TLS},
	}
	rec := &setRec{set: ls, parent: parent, pseudo: pseudo, conflicts: map[gw.SectionName]cond{}}
	s.byKey[ls.Namespace+"/"+ls.Name] = rec
	s.byPseudo[pseudo] = rec
	s.order = append(s.order, rec)
	return rec
}

// isListenerSetRef reports whether a route's parentRef names a ListenerSet.
func isListenerSetRef(p gw.ParentReference) bool {
	return string(deref(p.Group, gw.Group(Group))) == Group && string(deref(p.Kind, "Gateway")) == schema.ListenerSetKind.Name
}

// listenerSets converts the listeners of every ListenerSet attached to a
// handled Gateway, in merge order, after every Gateway's own.
func (c *converter) listenerSets() []config.Config {
	if len(c.in.ListenerSets) == 0 {
		return nil
	}
	gateways := map[string]*gw.Gateway{}
	for _, g := range c.in.Gateways {
		gateways[g.Namespace+"/"+g.Name] = g
	}
	sets := slices.Clone(c.in.ListenerSets)
	slices.SortFunc(sets, func(a, b *gw.ListenerSet) int { return compareObjects(a, b) })
	merged := map[string][]gw.Listener{} // by parent: the listeners taken so far
	var out []config.Config
	for _, ls := range sets {
		p := ls.Spec.ParentRef
		if string(deref(p.Group, gw.Group(Group))) != Group || string(deref(p.Kind, "Gateway")) != "Gateway" {
			continue // not a Gateway: not ours to judge
		}
		key := string(deref(p.Namespace, gw.Namespace(ls.Namespace))) + "/" + string(p.Name)
		parent := gateways[key]
		if parent == nil || !c.st.handled[key] {
			continue // another controller's Gateway, or none: no status from us
		}
		rec := c.st.sets.add(ls, parent)
		src := Source(schema.ListenerSetKind.Name, ls)
		if ok, why := c.allowsListenerSet(parent, ls.Namespace); !ok {
			rec.rejected = &cond{reason: string(gw.ListenerSetReasonNotAllowed), message: why}
			c.errorf(src, "spec.parentRef", "%s; not attached", why)
			continue
		}
		if rej := c.st.rejected[key]; rej != nil {
			rec.rejected = &cond{reason: string(gw.ListenerSetReasonParentNotAccepted),
				message: fmt.Sprintf("Gateway %s is not accepted: %s", key, rej.message)}
			continue
		}
		if _, ok := merged[key]; !ok {
			merged[key] = slices.Clone(parent.Spec.Listeners)
		}
		for i, e := range ls.Spec.Listeners {
			l := gw.Listener(e)
			if cf := listenerConflict(merged[key], l); cf != nil {
				rec.conflicts[l.Name] = *cf
				c.st.listener(rec.pseudo, l.Name).accepted = cf
				c.errorf(src, fmt.Sprintf("spec.listeners[%d]", i), "%s; listener skipped", cf.message)
				continue
			}
			merged[key] = append(merged[key], l)
			if cfg, ok := c.setListener(rec, i, l); ok {
				out = append(out, cfg)
			}
		}
	}
	return out
}

// setListener converts listener i of a ListenerSet into an Istio Gateway
// in the parent's namespace, as gateway does a Gateway's own.
func (c *converter) setListener(rec *setRec, i int, l gw.Listener) (config.Config, bool) {
	ls, parent := rec.set, rec.parent
	src := Source(schema.ListenerSetKind.Name, ls)
	field := fmt.Sprintf("spec.listeners[%d]", i)
	lrec := c.st.listener(rec.pseudo, l.Name)
	name := ListenerSetIstioGatewayName(parent.Name, ls.Namespace, ls.Name, l.Name)
	istioKey := parent.Namespace + "/" + name
	n := len(c.errs)
	server := c.server(rec.pseudo, l, field)
	// The shared listener code names the stand-in Gateway; say ListenerSet.
	for _, e := range c.errs[n:] {
		if e.Source == Source("Gateway", rec.pseudo) {
			e.Source = src
		}
	}
	if server == nil {
		if lrec.accepted == nil && lrec.resolved != nil {
			// Accepted with a reference that does not resolve: routes
			// attach for their status and attachedRoutes (holdUnresolved).
			rec.listeners = append(rec.listeners, &listener{gateway: parent, spec: l, istioKey: istioKey, set: ls, unserved: true})
		}
		return config.Config{}, false
	}
	// The parent's client certificate validation applies to the set's
	// terminating listeners on its ports too (frontendtls.go).
	caAnnotations, ok := c.frontendTLS(parent, rec.pseudo, l, server)
	if !ok {
		return config.Config{}, false
	}
	server.Port.Name = fmt.Sprintf("%s-%d-%s-%s-%s", strings.ToLower(string(l.Protocol)), l.Port, parent.Name, ls.Name, l.Name)
	// The generated VirtualServices live in the parent's namespace: its
	// hosts admit it beside the namespaces the set's allowedRoutes admit.
	if len(server.Hosts) > 0 && !strings.HasPrefix(server.Hosts[0], "*/") {
		_, host, _ := strings.Cut(server.Hosts[0], "/")
		if own := parent.Namespace + "/" + host; !slices.Contains(server.Hosts, own) {
			server.Hosts = append(server.Hosts, own)
			slices.Sort(server.Hosts)
		}
	}
	cfg := config.Config{
		Meta: config.Meta{Kind: schema.Gateway, Namespace: parent.Namespace, Name: name,
			Annotations:       map[string]string{model.NamespaceOnlyAnnotation: "true", model.GatewayAPIListenerAnnotation: string(l.Name)},
			CreationTimestamp: ls.CreationTimestamp.Time, Source: src},
		Spec: &networking.Gateway{
			Selector: map[string]string{GatewayNameLabel: parent.Name},
			Servers:  []*networking.Server{server},
		},
	}
	maps.Copy(cfg.Meta.Annotations, caAnnotations)
	if err := checkGateway(cfg); err != nil {
		c.errorf(src, field, "%v; listener skipped", err)
		lrec.accepted = &cond{reason: string(gw.ListenerReasonUnsupportedValue), message: err.Error()}
		return config.Config{}, false
	}
	lrec.programmed = true
	rec.listeners = append(rec.listeners, &listener{gateway: parent, spec: l, istioKey: istioKey, set: ls})
	return cfg, true
}

// allowsListenerSet reports whether Gateway g's spec.allowedListeners
// admit ListenerSets of namespace ns (None when unset), and if not, why.
func (c *converter) allowsListenerSet(g *gw.Gateway, ns string) (bool, string) {
	from, sel := gw.NamespacesFromNone, (*metav1.LabelSelector)(nil)
	if al := g.Spec.AllowedListeners; al != nil && al.Namespaces != nil {
		from, sel = deref(al.Namespaces.From, gw.NamespacesFromNone), al.Namespaces.Selector
	}
	switch from {
	case gw.NamespacesFromAll:
		return true, ""
	case gw.NamespacesFromSame:
		if ns == g.Namespace {
			return true, ""
		}
		return false, fmt.Sprintf("Gateway %s/%s allows ListenerSets of its own namespace only", g.Namespace, g.Name)
	case gw.NamespacesFromSelector:
		if sel == nil {
			return false, fmt.Sprintf("Gateway %s/%s: allowedListeners.namespaces.from is Selector but there is no selector", g.Namespace, g.Name)
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, fmt.Sprintf("Gateway %s/%s: allowedListeners selector: %v", g.Namespace, g.Name, err)
		}
		if s.Matches(c.namespaceLabels(ns)) {
			return true, ""
		}
		return false, fmt.Sprintf("Gateway %s/%s does not allow ListenerSets of namespace %s", g.Namespace, g.Name, ns)
	}
	return false, fmt.Sprintf("Gateway %s/%s does not allow ListenerSets (spec.allowedListeners)", g.Namespace, g.Name)
}

// listenerConflict reports how l conflicts with a listener taken before it
// on the same port: another protocol family or TLS termination
// (ProtocolConflict), or the same protocol and hostname (HostnameConflict).
func listenerConflict(taken []gw.Listener, l gw.Listener) *cond {
	for _, t := range taken {
		if t.Port != l.Port {
			continue
		}
		if protocolFamily(t.Protocol) != protocolFamily(l.Protocol) || terminates(t) != terminates(l) {
			return &cond{reason: string(gw.ListenerReasonProtocolConflict),
				message: fmt.Sprintf("port %d is already taken with protocol %s", l.Port, t.Protocol)}
		}
		if t.Protocol == l.Protocol && deref(t.Hostname, "") == deref(l.Hostname, "") {
			return &cond{reason: string(gw.ListenerReasonHostnameConflict),
				message: fmt.Sprintf("port %d is already taken with protocol %s and hostname %q", l.Port, l.Protocol, deref(l.Hostname, ""))}
		}
	}
	return nil
}

// protocolFamily groups the protocols that can share a port: HTTP; HTTPS
// and TLS (by SNI); TCP; UDP.
func protocolFamily(p gw.ProtocolType) string {
	switch p {
	case gw.HTTPProtocolType:
		return "http"
	case gw.HTTPSProtocolType, gw.TLSProtocolType:
		return "tls"
	}
	return string(p)
}

// nameBase starts the names of the VirtualServices generated for a
// listener: "GATEWAY-LISTENER" for a Gateway's own, and for a ListenerSet's
// "GATEWAY-SET-LISTENER-HASH", the hash of the set's namespace, name and
// listener keeping it apart from the Gateway's listeners and other sets'.
func (l *listener) nameBase() string {
	if l.set == nil {
		return l.gateway.Name + "-" + string(l.spec.Name)
	}
	return l.gateway.Name + "-" + l.set.Name + "-" + string(l.spec.Name) + "-" + shortHash(l.set.Namespace+"/"+l.set.Name+"/"+string(l.spec.Name))
}

// setCertificate is certificate for a ListenerSet's listener: the Secret
// is looked up in the ListenerSet's namespace (another needs a
// ReferenceGrant from ListenerSets there), bound to the parent Gateway's
// proxies, and named from the parent's namespace, where the generated
// Gateway lives: "kubernetes-gateway://NS/NAME" unless it is the parent's.
func (c *converter) setCertificate(rec *setRec, g *gw.Gateway, l gw.Listener, field string) (string, bool) {
	ls, parent := rec.set, rec.parent
	secret, ok := c.certificateRef(Source(schema.ListenerSetKind.Name, ls), schema.ListenerSetKind.Name, ls.Namespace, g, l, field)
	if !ok {
		return "", false
	}
	c.st.secrets.bindSet(parent, ls, ListenerSetIstioGatewayName(parent.Name, ls.Namespace, ls.Name, l.Name), secret, c.opts.DeploysProxies)
	if secret.Namespace == parent.Namespace {
		return secret.Name, true
	}
	return model.KubernetesGatewaySecretPrefix + secret.Namespace + "/" + secret.Name, true
}

// bindSet records that the Istio Gateway istioName, generated in parent's
// namespace for a listener of ListenerSet ls, terminates TLS with Secret
// ref: bound to the parent's proxies and, when ref is not of the parent's
// namespace, lent ref.
func (s *SecretGrants) bindSet(parent *gw.Gateway, ls *gw.ListenerSet, istioName string, ref model.SecretRef, deploys bool) {
	if s.gateways == nil {
		s.gateways = map[string]*binding{}
	}
	key := parent.Namespace + "/" + istioName
	b := s.gateways[key]
	if b == nil {
		b = &binding{source: Source(schema.ListenerSetKind.Name, ls), serviceAccount: DeployedServiceAccount(parent, deploys), lent: map[model.SecretRef]bool{}}
		s.gateways[key] = b
	}
	if ref.Namespace != parent.Namespace {
		b.lent[ref] = true
	}
}

// ListenerSetListeners returns the listeners the ListenerSets of in add to
// Gateway g, in merge order (oldest set first, then namespace/name): those
// of every set whose parentRef names g and whose namespace g's
// allowedListeners admit, conflicting ones included. The proxy deployer
// opens their ports on the Gateway's Service; conversion decides which of
// them are served.
func ListenerSetListeners(in Input, g *gw.Gateway) []gw.Listener {
	if len(in.ListenerSets) == 0 {
		return nil
	}
	c := &converter{in: in}
	sets := slices.Clone(in.ListenerSets)
	slices.SortFunc(sets, func(a, b *gw.ListenerSet) int { return compareObjects(a, b) })
	var out []gw.Listener
	for _, ls := range sets {
		p := ls.Spec.ParentRef
		if string(deref(p.Group, gw.Group(Group))) != Group || string(deref(p.Kind, "Gateway")) != "Gateway" ||
			string(p.Name) != g.Name || string(deref(p.Namespace, gw.Namespace(ls.Namespace))) != g.Namespace {
			continue
		}
		if ok, _ := c.allowsListenerSet(g, ls.Namespace); !ok {
			continue
		}
		for _, e := range ls.Spec.Listeners {
			out = append(out, gw.Listener(e))
		}
	}
	return out
}
