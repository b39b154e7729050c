package gatewayapi

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// ControllerName is the GatewayClass controllerName Wayfinder handles.
const ControllerName = "wayfinder.io/gateway-controller"

// GatewayNameLabel is the label by which a Gateway selects its proxies
// (Istio's convention): its value is the Gateway's name.
const GatewayNameLabel = model.GatewayAPIProxyLabel

// NameSuffix ends the name of every generated config.
const NameSuffix = "gwapi"

// Group is the Gateway API's API group.
const Group = gw.GroupName

// Input is everything conversion reads. Slices are not modified.
type Input struct {
	GatewayClasses  []*gw.GatewayClass
	Gateways        []*gw.Gateway
	HTTPRoutes      []*gw.HTTPRoute
	GRPCRoutes      []*gw.GRPCRoute
	TLSRoutes       []*gw.TLSRoute
	TCPRoutes       []*gw.TCPRoute
	ReferenceGrants []*gw.ReferenceGrant
	// BackendTLSPolicies become DestinationRules (backendtls.go); their
	// caCertificateRefs are read through ConfigMaps.
	BackendTLSPolicies []*gw.BackendTLSPolicy
	// ListenerSets add listeners to the Gateways that allow them
	// (listenerset.go).
	ListenerSets []*gw.ListenerSet
	// Namespaces gives the labels of a namespace, for allowedRoutes
	// selectors; nil, or a nil result, means no labels.
	Namespaces func(name string) map[string]string
	// NamespaceNames lists the namespaces that exist, so that an
	// allowedRoutes Selector can be resolved into the namespaces a
	// generated Gateway's hosts name; nil lists none.
	NamespaceNames func() []string
	// Services looks up a Service; nil means there is none.
	Services func(namespace, name string) *corev1.Service
	// Secrets looks up a Secret, against which listeners' certificateRefs
	// are resolved (certrefs.go), and which a client CA ref may name
	// (frontendtls.go): a nil result is a Secret that does not exist. A
	// nil func knows no Secrets: certificates are not checked (file mode,
	// which serves no Secrets) and a CA Secret does not resolve.
	Secrets func(namespace, name string) *corev1.Secret
	// ConfigMaps looks up a ConfigMap, which a Gateway's
	// infrastructure.parametersRef (params.go) and CA refs name: a nil
	// result is one that does not exist. A nil func knows none: a
	// parametersRef is checked by kind only, a CA ConfigMap does not
	// resolve.
	ConfigMaps func(namespace, name string) *corev1.ConfigMap
	// ServiceEntries are the Istio ServiceEntries (Spec
	// *networking.ServiceEntry), which backendRefs of kind Hostname
	// (group networking.istio.io) name by host.
	ServiceEntries []config.Config
}

// Options tune conversion.
type Options struct {
	// ControllerName is the GatewayClass controller handled; default
	// ControllerName.
	ControllerName string
	// DomainSuffix completes Service hostnames; default cluster.local.
	DomainSuffix string
	// DeploysProxies says that Wayfinder deploys the proxies of handled
	// Gateways (the deployer is on): a Gateway's Secrets then go to the
	// proxies running as the ServiceAccount it made (SecretGrants).
	DeploysProxies bool
}

func (o Options) withDefaults() Options {
	if o.ControllerName == "" {
		o.ControllerName = ControllerName
	}
	if o.DomainSuffix == "" {
		o.DomainSuffix = model.DefaultDomainSuffix
	}
	return o
}

// Source is how errors and generated configs name a Gateway API object.
func Source(kind string, obj metav1.Object) string {
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// IstioGatewayName is the name of the Istio Gateway generated for one
// listener of a Gateway, in the Gateway's namespace.
func IstioGatewayName(gateway string, listener gw.SectionName) string {
	return generatedName(gateway + "-" + string(listener) + "-" + NameSuffix)
}

// listener is one accepted listener of a handled Gateway.
type listener struct {
	gateway  *gw.Gateway
	spec     gw.Listener
	istioKey string // "namespace/name" of its Istio Gateway
	// unserved: accepted, but its references do not resolve (a bad
	// certificate), so it has no Istio Gateway; routes attach to it for
	// their status and its attachedRoutes, and nothing is generated.
	unserved bool
	// set is the ListenerSet the listener comes from; nil for a
	// Gateway's own (gateway is then the set's parent, listenerset.go).
	set *gw.ListenerSet
}

type converter struct {
	in      Input
	opts    Options
	errs    []*config.Error
	grants  *grants
	seHosts hostIndex
	// listeners of handled Gateways, by "namespace/name" of the Gateway.
	listeners map[string][]*listener
	hosts     map[hostKey]*hostRoutes
	st        *recorder
	// quiet silences errorf and warnf while a route no listener accepted
	// has its backends resolved for its status alone.
	quiet bool
	// nsLabels caches namespaceLabels (isolation.go).
	nsLabels map[string]labels.Set
}

func (c *converter) errorf(source, field, format string, args ...any) {
	if c.quiet {
		return
	}
	c.errs = append(c.errs, &config.Error{Source: source, Field: field, Message: fmt.Sprintf(format, args...)})
}

// warnf reports what is served all the same, only partly.
func (c *converter) warnf(source, field, format string, args ...any) {
	if c.quiet {
		return
	}
	c.errs = append(c.errs, &config.Error{Source: source, Field: field, Message: fmt.Sprintf(format, args...), Warning: true})
}

// Convert translates the handled Gateways and the HTTPRoutes attached to
// them into Istio Gateways and VirtualServices, sorted by kind, namespace
// and name, and reports what it could not convert.
func Convert(in Input, opts Options) ([]config.Config, []*config.Error) {
	cfgs, errs, _ := convert(in, opts)
	return cfgs, errs
}

func convert(in Input, opts Options) ([]config.Config, []*config.Error, *recorder) {
	c := &converter{in: in, opts: opts.withDefaults(), grants: newGrants(in.ReferenceGrants), seHosts: newHostIndex(in.ServiceEntries),
		listeners: map[string][]*listener{}, hosts: map[hostKey]*hostRoutes{}, st: newRecorder()}
	classes := c.handledClasses()
	var out []config.Config
	gateways := slices.Clone(in.Gateways)
	slices.SortFunc(gateways, func(a, b *gw.Gateway) int { return compareObjects(a, b) })
	for _, g := range gateways {
		if !classes[string(g.Spec.GatewayClassName)] {
			continue
		}
		out = append(out, c.gateway(g)...)
	}
	out = append(out, c.listenerSets()...)
	// Routes of every kind in one order, oldest first, then
	// namespace/name (HTTPRoute before GRPCRoute on a full tie): the
	// Gateway API's tie-break between routes.
	type routeObj struct {
		obj  metav1.Object
		http *gw.HTTPRoute
		grpc *gw.GRPCRoute
	}
	var routes []routeObj
	for _, r := range in.HTTPRoutes {
		routes = append(routes, routeObj{obj: r, http: r})
	}
	for _, r := range in.GRPCRoutes {
		routes = append(routes, routeObj{obj: r, grpc: r})
	}
	slices.SortStableFunc(routes, func(a, b routeObj) int {
		return cmp.Or(compareObjects(a.obj, b.obj), cmp.Compare(boolInt(a.http == nil), boolInt(b.http == nil)))
	})
	for order, r := range routes {
		if r.http != nil {
			c.httpRoute(order, r.http)
		} else {
			c.grpcRoute(order, r.grpc)
		}
	}
	out = append(out, c.virtualServices()...)
	out = append(out, c.streamRoutes(in.TLSRoutes, in.TCPRoutes)...)
	out = append(out, c.backendTLSPolicies()...)
	slices.SortFunc(out, func(a, b config.Config) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out, c.errs, c.st
}

// compareObjects orders objects oldest first, then by namespace and name:
// the Gateway API's tie-break between routes.
func compareObjects(a, b metav1.Object) int {
	return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time),
		strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
}

// handledClasses returns the names of the GatewayClasses Wayfinder handles.
func (c *converter) handledClasses() map[string]bool {
	out := map[string]bool{}
	for _, gc := range c.in.GatewayClasses {
		if string(gc.Spec.ControllerName) == c.opts.ControllerName {
			out[gc.Name] = true
		}
	}
	return out
}

// gateway converts one handled Gateway: one Istio Gateway per listener
// that can be served.
func (c *converter) gateway(g *gw.Gateway) []config.Config {
	src := Source("Gateway", g)
	var out []config.Config
	c.st.handled[g.Namespace+"/"+g.Name] = true
	if !c.parametersValid(g) {
		return nil
	}
	mixed := mixedTermination(g.Spec.Listeners)
	clientCert := c.backendClientCertificate(g) // backendclient.go
	for i, l := range g.Spec.Listeners {
		field := fmt.Sprintf("spec.listeners[%d]", i)
		rec := c.st.listener(g, l.Name)
		if m, ok := mixed[l.Name]; ok {
			c.errorf(src, field+".tls.mode", "%s; listener skipped", m.message)
			c.st.listenerNotAccepted(g, l, gw.ListenerReasonProtocolConflict, "%s", m.message)
			continue
		}
		server := c.server(g, l, field)
		if server == nil {
			c.holdUnresolved(g, l, rec)
			continue
		}
		caAnnotations, ok := c.frontendTLS(g, g, l, server)
		if !ok {
			continue
		}
		name := IstioGatewayName(g.Name, l.Name)
		cfg := config.Config{
			Meta: config.Meta{Kind: schema.Gateway, Namespace: g.Namespace, Name: name,
				Annotations:       map[string]string{model.NamespaceOnlyAnnotation: "true", model.GatewayAPIListenerAnnotation: string(l.Name)},
				CreationTimestamp: g.CreationTimestamp.Time, Source: src},
			Spec: &networking.Gateway{
				Selector: map[string]string{GatewayNameLabel: g.Name},
				Servers:  []*networking.Server{server},
			},
		}
		maps.Copy(cfg.Meta.Annotations, caAnnotations) // frontendtls.go
		maps.Copy(cfg.Meta.Annotations, clientCert)
		if err := checkGateway(cfg); err != nil {
			c.errorf(src, field, "%v; listener skipped", err)
			c.st.listenerNotAccepted(g, l, gw.ListenerReasonUnsupportedValue, "%v", err)
			continue
		}
		rec.programmed = true
		out = append(out, cfg)
		key := g.Namespace + "/" + g.Name
		c.listeners[key] = append(c.listeners[key], &listener{gateway: g, spec: l, istioKey: g.Namespace + "/" + name})
	}
	return out
}

// server builds the Istio server of one listener, or reports why not.
func (c *converter) server(g *gw.Gateway, l gw.Listener, field string) *networking.Server {
	src := Source("Gateway", g)
	host := "*"
	if l.Hostname != nil && *l.Hostname != "" {
		host = strings.ToLower(string(*l.Hostname))
	}
	if l.Protocol == gw.TCPProtocolType {
		host = "*"
	}
	s := &networking.Server{
		Port:  &networking.Port{Number: uint32(l.Port), Name: fmt.Sprintf("%s-%d-%s-%s", strings.ToLower(string(l.Protocol)), l.Port, g.Name, l.Name)},
		Hosts: c.serverHosts(g, l, host),
	}
	switch l.Protocol {
	case gw.HTTPProtocolType:
		s.Port.Protocol = "HTTP"
	case gw.HTTPSProtocolType:
		s.Port.Protocol = "HTTPS"
		cred, ok := c.certificate(g, l, field+".tls")
		if !ok {
			return nil
		}
		s.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: cred}
	case gw.TLSProtocolType:
		s.Port.Protocol = "TLS"
		if l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode == gw.TLSModePassthrough {
			s.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}
			break
		}
		cred, ok := c.certificate(g, l, field+".tls")
		if !ok {
			return nil
		}
		s.Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: cred}
	case gw.TCPProtocolType:
		s.Port.Protocol = "TCP"
	default:
		c.errorf(src, field+".protocol", "protocol %q is not served (HTTP, HTTPS, TLS and TCP are); listener skipped", l.Protocol)
		c.st.listenerNotAccepted(g, l, gw.ListenerReasonUnsupportedProtocol, "protocol %q is not served (HTTP, HTTPS, TLS and TCP are)", l.Protocol)
		return nil
	}
	return s
}

// certificate returns the credentialName of the Secret a listener
// terminates with. A Secret of another namespace needs a ReferenceGrant
// there; with one it is named "kubernetes-gateway://NAMESPACE/NAME", as
// istiod names it, and recorded in the SecretGrants that authorize sending
// it to the proxies of the Gateway's namespace (a Secret of the Gateway's
// own namespace keeps its plain name).
func (c *converter) certificate(g *gw.Gateway, l gw.Listener, field string) (string, bool) {
	if s := c.st.setOf(g); s != nil {
		return c.setCertificate(s, g, l, field)
	}
	secret, ok := c.certificateRef(Source("Gateway", g), "Gateway", g.Namespace, g, l, field)
	if !ok {
		return "", false
	}
	c.st.secrets.bind(g, l.Name, secret, c.opts.DeploysProxies)
	if secret.Namespace == g.Namespace {
		return secret.Name, true
	}
	return model.KubernetesGatewaySecretPrefix + secret.Namespace + "/" + secret.Name, true
}

// certificateRef resolves the certificateRef of listener l (recorded on
// g's status) of an object of kind ownerKind in namespace ownerNS (src
// in errors): it must be given, in mode Terminate, a Secret of ownerNS or
// one another namespace grants ownerKinds of ownerNS by a ReferenceGrant,
// and usable (certrefs.go). Only the first ref is served.
func (c *converter) certificateRef(src, ownerKind, ownerNS string, g *gw.Gateway, l gw.Listener, field string) (model.SecretRef, bool) {
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		c.errorf(src, field+".certificateRefs", "an HTTPS listener needs a certificate; listener skipped")
		c.st.listenerUnresolved(g, l, gw.ListenerReasonInvalidCertificateRef, "a certificateRef is required")
		return model.SecretRef{}, false
	}
	if l.TLS.Mode != nil && *l.TLS.Mode != gw.TLSModeTerminate {
		c.errorf(src, field+".mode", "mode %q is not served on %s listeners; listener skipped", *l.TLS.Mode, l.Protocol)
		c.st.listenerNotAccepted(g, l, gw.ListenerReasonUnsupportedValue, "TLS mode %q is not served on %s listeners", *l.TLS.Mode, l.Protocol)
		return model.SecretRef{}, false
	}
	if len(l.TLS.CertificateRefs) > 1 {
		c.warnf(src, field+".certificateRefs", "only the first certificate is served; %d more ignored", len(l.TLS.CertificateRefs)-1)
	}
	ref := l.TLS.CertificateRefs[0]
	f := field + ".certificateRefs[0]"
	if group, kind := deref(ref.Group, ""), deref(ref.Kind, "Secret"); group != "" || kind != "Secret" {
		c.errorf(src, f, "kind %s.%s is not a Secret; listener skipped", kind, group)
		c.st.listenerUnresolved(g, l, gw.ListenerReasonInvalidCertificateRef, "certificateRef kind %s.%s is not a Secret", kind, group)
		return model.SecretRef{}, false
	}
	ns := string(deref(ref.Namespace, gw.Namespace(ownerNS)))
	if ns != ownerNS && !c.grants.allowed(ownerKind, ownerNS, "", "Secret", ns, string(ref.Name)) {
		c.errorf(src, f, "Secret %s/%s is in another namespace and no ReferenceGrant there allows it (RefNotPermitted); listener skipped", ns, ref.Name)
		c.st.listenerUnresolved(g, l, gw.ListenerReasonRefNotPermitted, "Secret %s/%s is in another namespace and no ReferenceGrant allows it", ns, ref.Name)
		return model.SecretRef{}, false
	}
	if !c.certificateUsable(g, l, f, ns, string(ref.Name)) {
		return model.SecretRef{}, false
	}
	return model.SecretRef{Namespace: ns, Name: string(ref.Name)}, true
}

// kindAllowed reports whether a route kind may attach to l: a kind its
// protocol carries, and one of the listed kinds if any are listed.
func kindAllowed(l *listener, kind string) bool {
	if !slices.Contains(protocolKinds(l), kind) {
		return false
	}
	if ar := l.spec.AllowedRoutes; ar != nil && len(ar.Kinds) > 0 {
		for _, k := range ar.Kinds {
			if string(k.Kind) == kind && string(deref(k.Group, gw.Group(Group))) == Group {
				return true
			}
		}
		return false
	}
	return true
}

// protocolKinds are the route kinds a listener's protocol carries: HTTP
// routes on HTTP and HTTPS; TLSRoute on TLS (passthrough, or terminated
// and then proxied as TCP); TCPRoute on TCP.
func protocolKinds(l *listener) []string {
	switch l.spec.Protocol {
	case gw.HTTPProtocolType, gw.HTTPSProtocolType:
		return []string{schema.HTTPRouteKind.Name, schema.GRPCRouteKind.Name}
	case gw.TLSProtocolType:
		return []string{schema.TLSRouteKind.Name}
	case gw.TCPProtocolType:
		return []string{schema.TCPRouteKind.Name}
	}
	return nil
}

// passthrough reports whether l passes TLS through unterminated.
func passthrough(l *listener) bool {
	t := l.spec.TLS
	return l.spec.Protocol == gw.TLSProtocolType && t != nil && t.Mode != nil && *t.Mode == gw.TLSModePassthrough
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
