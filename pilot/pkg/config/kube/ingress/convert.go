package ingress

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Options tune conversion.
type Options struct {
	// IngressClass is the value of the legacy kubernetes.io/ingress.class
	// annotation Wayfinder handles (--ingress-class). Empty: none.
	IngressClass string
	// ControllerName is the IngressClass controller Wayfinder handles;
	// default ControllerName.
	ControllerName string
	// GatewaySelector selects the gateway proxies serving Ingresses;
	// default istio: ingressgateway.
	GatewaySelector map[string]string
	// DomainSuffix completes backend service names
	// (NAME.NAMESPACE.svc.SUFFIX); default cluster.local.
	DomainSuffix string
	// Services looks up a Service, to resolve a backend's named port. It
	// returns nil when there is none; a nil func knows no Services.
	Services func(namespace, name string) *corev1.Service
}

func (o Options) withDefaults() Options {
	if o.ControllerName == "" {
		o.ControllerName = ControllerName
	}
	if len(o.GatewaySelector) == 0 {
		o.GatewaySelector = map[string]string{"istio": "ingressgateway"}
	}
	if o.DomainSuffix == "" {
		o.DomainSuffix = model.DefaultDomainSuffix
	}
	return o
}

// GatewayName is the name of the Gateway generated for the Ingress named
// ingressName, in the Ingress's namespace.
func GatewayName(ingressName string) string { return ingressName + "-" + NameSuffix }

// TLSGatewayName is the name of the Gateway holding the HTTPS servers of
// the Ingress's TLS entries that name hosts.
func TLSGatewayName(ingressName string) string { return GatewayName(ingressName) + "-tls" }

// CredentialName is the credentialName of an Ingress TLS entry: the
// Secret is the Ingress's namespace's, as Kubernetes defines it, so the
// name says the namespace in the explicit form istiod parses
// ("kubernetes://NAMESPACE/NAME"). The gateway proxies serving it live in
// another namespace; their ServiceAccount needs get on the Secret.
func CredentialName(namespace, secret string) string {
	return model.KubernetesSecretPrefix + namespace + "/" + secret
}

// Source is how errors and generated configs name an Ingress.
func Source(ing *networkingv1.Ingress) string { return "Ingress " + ing.Namespace + "/" + ing.Name }

// hostRoute is one route for a host and where it came from.
type hostRoute struct {
	order int // the Ingress's position, oldest first
	match pathMatch
	route *networking.HTTPRoute
}

// hostEntry is what every Ingress says about one host.
type hostEntry struct {
	routes   []hostRoute
	fallback *networking.HTTPRoute // a defaultBackend, last
	owner    *networkingv1.Ingress // the oldest Ingress naming the host
	gateways map[string]bool
}

// Convert translates the handled Ingresses (see Handled) into Gateways and
// VirtualServices, sorted by kind, namespace and name, and reports what it
// could not convert.
func Convert(ingresses []*networkingv1.Ingress, classes []*networkingv1.IngressClass, opts Options) ([]config.Config, []*config.Error) {
	opts = opts.withDefaults()
	var handled []*networkingv1.Ingress
	for _, ing := range ingresses {
		if Handled(ing, classes, opts) {
			handled = append(handled, ing)
		}
	}
	slices.SortStableFunc(handled, compareCreation)

	c := &converter{opts: opts, hosts: map[string]*hostEntry{}}
	var out []config.Config
	for i, ing := range handled {
		gws, tls := c.gateways(ing)
		out = append(out, gws...)
		c.rules(i, ing, tls)
	}
	out = append(out, c.virtualServices()...)
	slices.SortFunc(out, func(a, b config.Config) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out, c.errs
}

// compareCreation orders Ingresses oldest first, then by namespace and
// name, so merged hosts do not depend on list order.
func compareCreation(a, b *networkingv1.Ingress) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
		strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

type converter struct {
	opts  Options
	hosts map[string]*hostEntry
	errs  []*config.Error
}

func (c *converter) errorf(ing *networkingv1.Ingress, field, format string, args ...any) {
	c.errs = append(c.errs, &config.Error{Source: Source(ing), Field: field, Message: fmt.Sprintf(format, args...)})
}

func (c *converter) warnf(ing *networkingv1.Ingress, field, format string, args ...any) {
	c.errs = append(c.errs, &config.Error{Source: Source(ing), Field: field, Message: fmt.Sprintf(format, args...), Warning: true})
}

// gateways builds the Ingress's Gateways. The main one has HTTP on 80 for
// every host, and HTTPS on 443 for TLS entries without hosts. TLS entries
// naming hosts go to a second Gateway (suffix "-tls"), which only the
// VirtualServices of named hosts bind: bound to the catch-all host "*" as
// well, its server for shop.example.com would merge the "*" routes into
// that host's, which the HTTP port, where Envoy picks the most specific
// host, never does. It reports whether there is a TLS Gateway.
func (c *converter) gateways(ing *networkingv1.Ingress) ([]config.Config, bool) {
	main := &networking.Gateway{Selector: maps.Clone(c.opts.GatewaySelector)}
	named := &networking.Gateway{Selector: maps.Clone(c.opts.GatewaySelector)}
	for i, t := range ing.Spec.TLS {
		if t.SecretName == "" {
			c.errorf(ing, fmt.Sprintf("spec.tls[%d].secretName", i), "is required to terminate TLS; TLS entry skipped")
			continue
		}
		s := &networking.Server{
			Port:  &networking.Port{Number: 443, Protocol: "HTTPS", Name: fmt.Sprintf("https-443-ingress-%s-%s-%d", ing.Name, ing.Namespace, i)},
			Hosts: slices.Clone(t.Hosts),
			Tls:   &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: CredentialName(ing.Namespace, t.SecretName)},
		}
		if len(s.Hosts) == 0 {
			s.Hosts = []string{"*"}
			main.Servers = append(main.Servers, s)
			continue
		}
		named.Servers = append(named.Servers, s)
	}
	main.Servers = append(main.Servers, &networking.Server{
		Port:  &networking.Port{Number: 80, Protocol: "HTTP", Name: fmt.Sprintf("http-80-ingress-%s-%s", ing.Name, ing.Namespace)},
		Hosts: []string{"*"},
	})
	meta := config.Meta{Kind: schema.Gateway, Namespace: ing.Namespace, Name: GatewayName(ing.Name),
		CreationTimestamp: ing.CreationTimestamp.Time, Source: Source(ing)}
	out := []config.Config{{Meta: meta, Spec: main}}
	if len(named.Servers) == 0 {
		return out, false
	}
	meta.Name = TLSGatewayName(ing.Name)
	return append(out, config.Config{Meta: meta, Spec: named}), true
}

// rules adds the Ingress's paths and default backend to their hosts.
func (c *converter) rules(order int, ing *networkingv1.Ingress, tlsGateway bool) {
	entry := func(host string) *hostEntry {
		e, ok := c.hosts[host]
		if !ok {
			e = &hostEntry{owner: ing, gateways: map[string]bool{}}
			c.hosts[host] = e
		}
		e.gateways[ing.Namespace+"/"+GatewayName(ing.Name)] = true
		if tlsGateway && host != "*" {
			e.gateways[ing.Namespace+"/"+TLSGatewayName(ing.Name)] = true
		}
		return e
	}
	var fallback *networking.HTTPRoute
	if b := ing.Spec.DefaultBackend; b != nil {
		fallback = c.backendRoute(ing, b, "spec.defaultBackend")
		if fallback != nil {
			fallback.Name = ing.Namespace + "/" + ing.Name + "/defaultBackend"
		}
	}
	var hosts []string
	for i, rule := range ing.Spec.Rules {
		host := strings.ToLower(rule.Host)
		if host == "" {
			host = "*"
		}
		e := entry(host)
		hosts = append(hosts, host)
		if rule.HTTP == nil {
			continue
		}
		for j, p := range rule.HTTP.Paths {
			field := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
			m, err := convertPath(p)
			if err != nil {
				c.errorf(ing, field+".path", "%v; path skipped", err)
				continue
			}
			r := c.backendRoute(ing, &p.Backend, field+".backend")
			if r == nil {
				continue
			}
			r.Name = fmt.Sprintf("%s/%s/rules/%d/paths/%d", ing.Namespace, ing.Name, i, j)
			r.Match = m.matches
			e.routes = append(e.routes, hostRoute{order: order, match: m, route: r})
		}
	}
	if fallback == nil {
		return
	}
	// The default backend serves what no path of the Ingress's hosts
	// matches, and every host no rule names.
	for _, host := range append(hosts, "*") {
		e := entry(host)
		if e.fallback != nil {
			if host == "*" {
				c.warnf(ing, "spec.defaultBackend", "an older Ingress's defaultBackend already serves requests no rule matches; this one is not used for them")
			}
			continue
		}
		e.fallback = fallback
	}
}

// backendRoute routes to a Service backend, or reports why it cannot.
func (c *converter) backendRoute(ing *networkingv1.Ingress, b *networkingv1.IngressBackend, field string) *networking.HTTPRoute {
	svc := b.Service
	if svc == nil {
		c.errorf(ing, field, "only service backends are supported (resource backends are not); skipped")
		return nil
	}
	port := uint32(max(svc.Port.Number, 0))
	if port == 0 {
		if svc.Port.Name == "" {
			c.errorf(ing, field+".service.port", "a port number or name is required; skipped")
			return nil
		}
		var ok bool
		port, ok = c.namedPort(ing.Namespace, svc.Name, svc.Port.Name)
		if !ok {
			c.errorf(ing, field+".service.port.name", "Service %s/%s has no port named %q (or does not exist); skipped", ing.Namespace, svc.Name, svc.Port.Name)
			return nil
		}
	}
	return &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{
		Host: svc.Name + "." + ing.Namespace + ".svc." + c.opts.DomainSuffix,
		Port: &networking.PortSelector{Number: port},
	}}}}
}

func (c *converter) namedPort(namespace, service, name string) (uint32, bool) {
	if c.opts.Services == nil {
		return 0, false
	}
	s := c.opts.Services(namespace, service)
	if s == nil {
		return 0, false
	}
	for _, p := range s.Spec.Ports {
		if p.Name == name && p.Port > 0 {
			return uint32(p.Port), true
		}
	}
	return 0, false
}

// virtualServices builds one VirtualService per host, routes ordered as
// Kubernetes asks: longest path first, exact before prefix on a tie, then
// oldest Ingress and the order written; the default backend last.
func (c *converter) virtualServices() []config.Config {
	var out []config.Config
	names := map[string]bool{}
	for _, host := range slices.Sorted(maps.Keys(c.hosts)) {
		e := c.hosts[host]
		slices.SortStableFunc(e.routes, func(a, b hostRoute) int {
			if a.match.length != b.match.length {
				return cmp.Compare(b.match.length, a.match.length)
			}
			if a.match.exact != b.match.exact {
				if a.match.exact {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.order, b.order)
		})
		vs := &networking.VirtualService{Hosts: []string{host}, Gateways: slices.Sorted(maps.Keys(e.gateways))}
		hasCatchAll := false
		for _, r := range e.routes {
			vs.Http = append(vs.Http, r.route)
			hasCatchAll = hasCatchAll || r.match.catchAll()
		}
		if e.fallback != nil && !hasCatchAll {
			vs.Http = append(vs.Http, proto.Clone(e.fallback).(*networking.HTTPRoute))
		}
		if len(vs.Http) == 0 {
			// Rules without paths and no default backend: nothing to serve.
			continue
		}
		name := hostLabel(host) + "-" + e.owner.Name + "-" + NameSuffix
		if names[e.owner.Namespace+"/"+name] {
			// "a-b.com" and "a.b.com" read the same once dots are dashes.
			sum := sha256.Sum256([]byte(host))
			name += "-" + hex.EncodeToString(sum[:4])
		}
		names[e.owner.Namespace+"/"+name] = true
		out = append(out, config.Config{
			Meta: config.Meta{Kind: schema.VirtualService, Namespace: e.owner.Namespace, Name: name,
				CreationTimestamp: e.owner.CreationTimestamp.Time, Source: Source(e.owner)},
			Spec: vs,
		})
	}
	return out
}

// hostLabel makes a host usable in a name: dots become dashes, the
// wildcard "wildcard".
func hostLabel(host string) string {
	return strings.ReplaceAll(strings.ReplaceAll(host, "*", "wildcard"), ".", "-")
}
