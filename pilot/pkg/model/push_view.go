package model

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// A push context answers for one proxy namespace at a time: which
// DestinationRule applies to a service, which services and VirtualServices
// are exported to it. A push context from NewPushContext answers for a
// namespace that nothing names and that has no config of its own (the
// default view); ForProxy returns one answering for a proxy, sharing all
// indexes. Most namespaces see exactly the default view, so their
// proxies share clusters and a translation: ViewKey says when one does
// not.

// view is the proxy a scoped push context answers for.
type view struct {
	// ns is the proxy's namespace; "" in the default view.
	ns string
	// labels are the proxy's, for DestinationRules with a workloadSelector.
	labels map[string]string
	key    string
	// clientCert is the credentialName of the backend client certificate
	// the proxy's Gateway presents (BackendClientCertificate); "" for none.
	clientCert string
}

// ViewKey names what config p sees, as far as it differs from the default
// view: "" for a proxy whose namespace no DestinationRule, ServiceEntry,
// Service or VirtualService treats apart (its own rules, "." or naming it
// in exportTo), else its namespace, and for a namespace with
// DestinationRules that select workloads, which of those select p; then
// the backend client certificate its Gateway presents, if any
// (BackendClientCertificate). Two
// proxies with the same ViewKey (and the same Gateways) get the same
// clusters, listeners and routes, so the key belongs in the gateway group
// key.
func (ps *PushContext) ViewKey(p *Proxy) string {
	return ps.viewKey(p, ps.Base().backendClientCertificate(p))
}

// viewKey is ViewKey for a proxy presenting backend client certificate
// cert ("" for none).
func (ps *PushContext) viewKey(p *Proxy, cert string) string {
	key := ps.drViewKey(p)
	if cert != "" {
		// Proxies presenting a Gateway's backend client certificate get
		// clusters of their own.
		if key == "" {
			key = p.Namespace
		}
		key += "/client-cert/" + cert
	}
	return key
}

// drViewKey is ViewKey as DestinationRules, services and VirtualServices
// decide it.
func (ps *PushContext) drViewKey(p *Proxy) string {
	b := ps.Base()
	ns := p.Namespace
	drs := b.drs
	if drs == nil {
		drs = &drIndex{} // a push context not made by NewPushContext
	}
	if !drs.audience[ns] && !b.svcAudience[ns] && !b.vsAudience[ns] {
		return ""
	}
	if !drs.selectorNamespaces[ns] {
		return ns
	}
	var sel []string
	for _, m := range drs.namespaceLocal[ns].all() {
		if s := m.rule.Spec.(*networking.DestinationRule).GetWorkloadSelector(); s != nil && SubsetLabelsMatch(s.GetMatchLabels(), p.Labels) {
			sel = append(sel, m.rule.Key().String())
		}
	}
	if len(sel) == 0 {
		return ns
	}
	slices.Sort(sel)
	h := sha256.New()
	for _, s := range sel {
		h.Write([]byte(s + "\n"))
	}
	return ns + "/selected/" + hex.EncodeToString(h.Sum(nil)[:8])
}

// ForProxy returns the push context as proxy p sees it (its view of
// DestinationRules, services and VirtualServices), sharing ps's indexes.
// For a proxy of the default view it is the push context itself.
func (ps *PushContext) ForProxy(p *Proxy) *PushContext {
	b := ps.Base()
	cert := b.backendClientCertificate(p)
	key := b.viewKey(p, cert)
	if key == "" {
		return b
	}
	next := *b
	next.base = b
	next.view = &view{ns: p.Namespace, labels: p.Labels, key: key, clientCert: cert}
	return &next
}

// backendClientCertificate is the credentialName of the backend client
// certificate p presents: that of the first Gateway selecting p (by
// namespace and name) that carries BackendClientCertificateAnnotation and
// serves p's namespace only, as the generated ones do; "" for none.
func (ps *PushContext) backendClientCertificate(p *Proxy) string {
	if !ps.backendClientCerts {
		return ""
	}
	for _, gw := range ps.GatewaysForProxy(p) {
		if gw.Namespace == p.Namespace && gw.Annotations[NamespaceOnlyAnnotation] == "true" {
			if cert := gw.Annotations[BackendClientCertificateAnnotation]; cert != "" {
				return cert
			}
		}
	}
	return ""
}

// BackendClientCertificate is the credentialName of the client
// certificate the view's proxy presents on connections whose TLS a
// BackendTLSPolicy originates (a Gateway's spec.tls.backend); "" for
// none, and in the default view.
func (ps *PushContext) BackendClientCertificate() string {
	if ps.view == nil {
		return ""
	}
	return ps.view.clientCert
}

// Base returns the push context ps is a view of (ps itself when it is
// one from NewPushContext): caches keyed by push compare bases, and key
// by View within one.
func (ps *PushContext) Base() *PushContext {
	if ps.base != nil {
		return ps.base
	}
	return ps
}

// View is the ViewKey of the proxy ps answers for; "" for the default view.
func (ps *PushContext) View() string {
	if ps.view == nil {
		return ""
	}
	return ps.view.key
}

// viewNamespace is the proxy namespace lookups use: "" in the default
// view, which no exportTo names and which has no rules of its own.
func (ps *PushContext) viewNamespace() string {
	if ps.view == nil {
		return ""
	}
	return ps.view.ns
}

// RootNamespace is the namespace whose DestinationRules are the fallback
// for every namespace's services.
func (ps *PushContext) RootNamespace() string { return ps.scoping.RootNamespace }

// serviceVisible reports whether svc is exported to the view's namespace.
func (ps *PushContext) serviceVisible(svc *Service) bool {
	return exportedTo(svc.ExportTo, ps.scoping.DefaultServiceExportTo, svc.Namespace, ps.viewNamespace())
}

// vsVisibility classifies how VirtualService vs reaches the view's
// namespace, as istiod's virtualServiceIndex files it: 1 private (its own
// namespace only), 2 exported to the namespace by name, 3 public, 0 not.
func (ps *PushContext) vsVisibility(vs *config.Config) int {
	ns := ps.viewNamespace()
	list := vs.Spec.(*networking.VirtualService).GetExportTo()
	if len(list) == 0 {
		d := ps.scoping.DefaultVirtualServiceExportTo
		switch {
		case slices.Contains(d, ExportPrivate):
			if vs.Namespace == ns {
				return 1
			}
			return 0
		case d == nil || slices.Contains(d, ExportPublic):
			return 3
		}
		return 0
	}
	set := newExportSet(list)
	switch {
	case set.has(ExportPublic):
		return 3
	case set.has(ExportNone):
		return 0
	case vs.Namespace == ns && (set.has(ExportPrivate) || set.has(ns)):
		return 1
	case set.has(ns) && ns != "":
		return 2
	}
	return 0
}

// visibleVirtualServices filters vss (oldest first) to those exported to
// the view's namespace, keeping their order. istiod lists those private to
// the namespace first, then those exported to it by name, then public
// ones; Wayfinder merges the routes of VirtualServices sharing a host
// oldest first whatever their exportTo (route.BuildGatewayRoutes), so the
// order here would change nothing.
func (ps *PushContext) visibleVirtualServices(vss []config.Config) []config.Config {
	if !ps.vsScoped {
		return vss // every VirtualService is public
	}
	out := make([]config.Config, 0, len(vss))
	for i := range vss {
		if ps.vsVisibility(&vss[i]) != 0 {
			out = append(out, vss[i])
		}
	}
	return out
}

// serviceAudience are the namespaces that see services otherwise than the
// default view: those of services not exported everywhere, and those
// named in exportTo lists.
func serviceAudience(services []*Service, sc Scoping) map[string]bool {
	out := map[string]bool{}
	for _, svc := range services {
		exportAudience(out, svc.ExportTo, sc.DefaultServiceExportTo, svc.Namespace)
	}
	return out
}

// indexVirtualServiceAudience sets vsAudience and vsScoped.
func (ps *PushContext) indexVirtualServiceAudience() {
	ps.vsAudience = map[string]bool{}
	for _, vs := range ps.virtualServices {
		exportAudience(ps.vsAudience, vs.Spec.(*networking.VirtualService).GetExportTo(), ps.scoping.DefaultVirtualServiceExportTo, vs.Namespace)
	}
	ps.vsScoped = len(ps.vsAudience) > 0
}
