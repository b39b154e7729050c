package grpcgen

import (
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// meshVirtualServices indexes the VirtualServices that apply to the mesh
// (no gateways, or "mesh" among them) by the hosts they name, short names
// resolved in the VirtualService's namespace.
type meshVirtualServices struct {
	exact map[string]*config.Config
	// wildcards are "*.suffix" and "*" patterns, oldest VirtualService first.
	wildcards []wildcardVS
}

type wildcardVS struct {
	pattern string
	vs      *config.Config
}

// appliesToMesh reports whether a VirtualService's gateways field binds it
// to sidecars and proxyless clients: empty means only the mesh.
func appliesToMesh(spec *networking.VirtualService) bool {
	return len(spec.GetGateways()) == 0 || slices.Contains(spec.GetGateways(), "mesh")
}

// indexMeshVirtualServices builds the index. VirtualServices come oldest
// first; when two name the same host the older one wins, as Istio does for
// sidecars, and the newer one is reported.
func indexMeshVirtualServices(push *model.PushContext, r *reporter) *meshVirtualServices {
	idx := &meshVirtualServices{exact: map[string]*config.Config{}}
	vss := push.VirtualServices()
	claimed := map[string]*config.Config{}
	for i := range vss {
		vs := &vss[i]
		spec, ok := vs.Spec.(*networking.VirtualService)
		if !ok || !appliesToMesh(spec) {
			continue
		}
		for _, h := range spec.GetHosts() {
			host := push.ResolveShortname(h, vs.Namespace)
			if prev, ok := claimed[host]; ok {
				if prev != vs {
					r.warnf(vs, "spec.hosts", "host %s is already routed for the mesh by %s; this VirtualService is ignored for it", host, prev.Key())
				}
				continue
			}
			claimed[host] = vs
			if strings.HasPrefix(host, "*") {
				idx.wildcards = append(idx.wildcards, wildcardVS{pattern: host, vs: vs})
			} else {
				idx.exact[host] = vs
			}
		}
	}
	return idx
}

// forHost returns the VirtualService routing host: an exact host first,
// then the most specific wildcard, the older on a tie.
func (idx *meshVirtualServices) forHost(host string) *config.Config {
	if vs, ok := idx.exact[host]; ok {
		return vs
	}
	var best *config.Config
	bestLen := -1
	for _, w := range idx.wildcards {
		suffix := w.pattern[1:]
		if strings.HasSuffix(host, suffix) && len(suffix) > bestLen {
			best, bestLen = w.vs, len(suffix)
		}
	}
	return best
}
