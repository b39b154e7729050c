package gatewayapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	networking "istio.io/api/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// streamRoutes converts TLSRoutes and TCPRoutes onto the TLS passthrough
// and TCP translation: one VirtualService per route and listener it is
// attached to, in the Gateway's namespace, dated like the route, so that
// where two routes claim one TCP listener (or one SNI name), the oldest
// wins, as the Gateway API asks and as the translator already decides.
//
//   - TLSRoute on a Passthrough listener: a tls route matching the SNI
//     names (the route's hostnames narrowed to the listener's).
//   - TLSRoute on a Terminate listener, and TCPRoute on a TCP listener:
//     a tcp route; the decrypted (or plain) stream goes to the backends.
func (c *converter) streamRoutes(tls []*gw.TLSRoute, tcp []*gw.TCPRoute) []config.Config {
	var out []config.Config
	names := map[string]bool{}
	add := func(kind string, r metav1.Object, a attachment, vs *networking.VirtualService) {
		g := a.listener.gateway
		name := generatedName(a.listener.nameBase() + "-" + r.GetNamespace() + "-" + r.GetName() + "-" + NameSuffix)
		if names[g.Namespace+"/"+name] {
			sum := sha256.Sum256([]byte(kind + "/" + r.GetNamespace() + "/" + r.GetName()))
			name += "-" + hex.EncodeToString(sum[:4])
		}
		names[g.Namespace+"/"+name] = true
		cfg := config.Config{
			Meta: config.Meta{Kind: schema.VirtualService, Namespace: g.Namespace, Name: name,
				CreationTimestamp: r.GetCreationTimestamp().Time, Source: Source(kind, r)},
			Spec: vs,
		}
		if err := check(cfg, ""); err != nil {
			c.errorf(Source(kind, r), "spec", "%v; not served on listener %s", err, a.listener.spec.Name)
			return
		}
		out = append(out, cfg)
	}
	tls = slices.Clone(tls)
	slices.SortFunc(tls, func(a, b *gw.TLSRoute) int { return compareObjects(a, b) })
	for _, r := range tls {
		src := Source(schema.TLSRouteKind.Name, r)
		atts := c.attach(schema.TLSRouteKind.Name, src, r.Namespace, r.Spec.ParentRefs, r.Spec.Hostnames)
		if len(atts) == 0 && len(r.Spec.Rules) > 0 {
			c.statusOnly(src, func() { c.streamDestinations(src, r.Namespace, r.Spec.Rules[0].BackendRefs, "spec.rules[0]") })
		}
		if len(atts) == 0 || len(r.Spec.Rules) == 0 {
			continue
		}
		dests := c.streamDestinations(src, r.Namespace, r.Spec.Rules[0].BackendRefs, "spec.rules[0]")
		if len(dests) == 0 {
			continue
		}
		for _, a := range atts {
			vs := &networking.VirtualService{Hosts: slices.Clone(a.hosts), Gateways: []string{a.listener.istioKey}}
			if passthrough(a.listener) {
				vs.Tls = []*networking.TLSRoute{{
					Match: []*networking.TLSMatchAttributes{{SniHosts: slices.Clone(a.hosts)}},
					Route: cloneDests(dests),
				}}
			} else {
				vs.Tcp = []*networking.TCPRoute{{Route: cloneDests(dests)}}
			}
			add(schema.TLSRouteKind.Name, r, a, vs)
		}
	}
	tcp = slices.Clone(tcp)
	slices.SortFunc(tcp, func(a, b *gw.TCPRoute) int { return compareObjects(a, b) })
	for _, r := range tcp {
		src := Source(schema.TCPRouteKind.Name, r)
		atts := c.attach(schema.TCPRouteKind.Name, src, r.Namespace, r.Spec.ParentRefs, nil)
		if len(atts) == 0 && len(r.Spec.Rules) > 0 {
			c.statusOnly(src, func() { c.streamDestinations(src, r.Namespace, r.Spec.Rules[0].BackendRefs, "spec.rules[0]") })
		}
		if len(atts) == 0 || len(r.Spec.Rules) == 0 {
			continue
		}
		dests := c.streamDestinations(src, r.Namespace, r.Spec.Rules[0].BackendRefs, "spec.rules[0]")
		if len(dests) == 0 {
			continue
		}
		for _, a := range atts {
			add(schema.TCPRouteKind.Name, r, a, &networking.VirtualService{
				Hosts: []string{"*"}, Gateways: []string{a.listener.istioKey},
				Tcp: []*networking.TCPRoute{{Route: cloneDests(dests)}},
			})
		}
	}
	return out
}

// streamDestinations resolves a stream route's backends. A connection
// cannot be answered with a 500: a route without a usable backend is
// left out (each refusal is reported), and its connections are refused.
func (c *converter) streamDestinations(src, ns string, refs []gw.BackendRef, field string) []*networking.RouteDestination {
	var out []*networking.RouteDestination
	for k, b := range refs {
		w := deref(b.Weight, 1)
		if w == 0 {
			continue
		}
		dest, ok := c.backend(src, ns, b.BackendObjectReference, fmt.Sprintf("%s.backendRefs[%d]", field, k))
		if !ok {
			continue
		}
		out = append(out, &networking.RouteDestination{Destination: dest, Weight: w})
	}
	if len(out) == 1 {
		out[0].Weight = 0
	}
	if len(out) == 0 && len(refs) > 0 {
		c.errorf(src, field+".backendRefs", "no usable backend; route skipped")
	}
	return out
}

func cloneDests(in []*networking.RouteDestination) []*networking.RouteDestination {
	out := make([]*networking.RouteDestination, len(in))
	for i, d := range in {
		out[i] = &networking.RouteDestination{Destination: cloneDest(d.Destination), Weight: d.Weight}
	}
	return out
}

func cloneDest(d *networking.Destination) *networking.Destination {
	return &networking.Destination{Host: d.Host, Subset: d.Subset, Port: &networking.PortSelector{Number: d.GetPort().GetNumber()}}
}
