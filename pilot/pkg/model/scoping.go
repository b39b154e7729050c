package model

import (
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// DefaultRootNamespace is the namespace whose DestinationRules apply to
// every namespace's services, as Istio's mesh config rootNamespace
// defaults to.
const DefaultRootNamespace = "istio-system"

// Scoping says how config of one namespace reaches proxies of another:
// the mesh config fields istiod reads for it (rootNamespace and the
// default exportTo of each kind). The zero value is istiod's default mesh:
// root namespace istio-system, everything exported to every namespace.
type Scoping struct {
	// RootNamespace holds the DestinationRules that are a fallback for
	// every service: consulted after the proxy's and the service's own
	// namespace. Empty means DefaultRootNamespace.
	RootNamespace string
	// DefaultDestinationRuleExportTo, DefaultVirtualServiceExportTo and
	// DefaultServiceExportTo apply to objects without exportTo. nil means
	// "*". As in istiod, only "." and "*" are honoured in them.
	DefaultDestinationRuleExportTo []string
	DefaultVirtualServiceExportTo  []string
	DefaultServiceExportTo         []string
	// DomainSuffix is the cluster domain (--domain-suffix) that completes
	// short host names: "reviews" in namespace default is
	// "reviews.default.svc.DOMAINSUFFIX". Empty means DefaultDomainSuffix.
	// Not mesh config, but like it fixed for the life of the process, and
	// it decides which service a name of one namespace reaches.
	DomainSuffix string
	// Mesh is the mesh config in force for the push (read only; the server
	// takes one snapshot per full push). nil means istiod's defaults. Its
	// rootNamespace is not read from here: RootNamespace above is the one
	// the caller settled on (an explicit --root-namespace wins).
	Mesh *mesh.Config
}

// defaultMesh is the Mesh of push contexts made without one.
var defaultMesh = mesh.Default()

// DefaultDomainSuffix is the cluster domain when none is given, as in
// Kubernetes and istiod.
const DefaultDomainSuffix = "cluster.local"

// withDefaults fills what the zero value leaves to istiod's defaults.
func (s Scoping) withDefaults() Scoping {
	if s.RootNamespace == "" {
		s.RootNamespace = DefaultRootNamespace
	}
	if s.DomainSuffix == "" {
		s.DomainSuffix = DefaultDomainSuffix
	}
	if s.Mesh == nil {
		s.Mesh = defaultMesh
	}
	return s
}

// Visibility names in exportTo: every namespace, the object's own, none.
const (
	ExportPublic  = "*"
	ExportPrivate = "."
	ExportNone    = "~"
)

// exportSet is an exportTo list as a set, as istiod's visibility sets.
type exportSet map[string]struct{}

func newExportSet(list []string) exportSet {
	s := make(exportSet, len(list))
	for _, e := range list {
		s[e] = struct{}{}
	}
	return s
}

func (s exportSet) has(e string) bool { _, ok := s[e]; return ok }

func (s exportSet) equal(o exportSet) bool {
	if len(s) != len(o) {
		return false
	}
	for e := range s {
		if !o.has(e) {
			return false
		}
	}
	return true
}

func (s exportSet) supersetOf(o exportSet) bool {
	for e := range o {
		if !s.has(e) {
			return false
		}
	}
	return true
}

// sorted lists s for deterministic iteration.
func (s exportSet) sorted() []string {
	out := make([]string, 0, len(s))
	for e := range s {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// named are the namespaces s names explicitly (not ".", "*" or "~").
func (s exportSet) named() []string {
	var out []string
	for _, e := range s.sorted() {
		if e != ExportPublic && e != ExportPrivate && e != ExportNone {
			out = append(out, e)
		}
	}
	return out
}

// exportedTo reports whether an object of namespace ns with exportTo list
// (defaults when empty) is visible to namespace client, following istiod's
// IsServiceVisible (also its VirtualService index, which is the same
// rule): "*" everyone, "." or ns itself the own namespace, a name that
// namespace; a default list honours only "." and "*".
func exportedTo(list, defaults []string, ns, client string) bool {
	if len(list) == 0 {
		if defaults == nil {
			return true
		}
		if slices.Contains(defaults, ExportPrivate) {
			return ns == client
		}
		return slices.Contains(defaults, ExportPublic)
	}
	if slices.Contains(list, ExportPublic) {
		return true
	}
	if slices.Contains(list, ExportNone) {
		return false
	}
	for _, e := range list {
		if (e == ExportPrivate && ns == client) || e == client {
			return true
		}
	}
	return false
}

// exportAudience adds to ns the namespaces for which an object of
// namespace own with exportTo list (defaults when empty) is seen
// differently than by a namespace nothing names: its own namespace when it
// is not public, and every namespace it names.
func exportAudience(into map[string]bool, list, defaults []string, own string) {
	if exportedTo(list, defaults, own, "") {
		return // public: every namespace sees it alike
	}
	into[own] = true
	for _, e := range list {
		if e != ExportPublic && e != ExportPrivate && e != ExportNone {
			into[e] = true
		}
	}
}

// ParseExportToAnnotation splits the value of Istio's
// networking.istio.io/exportTo annotation on a Kubernetes Service
// ("ns1,ns2" or "." or "*" or "~") into an exportTo list.
func ParseExportToAnnotation(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// ExportToAnnotation is the Kubernetes Service annotation istiod reads as
// the Service's exportTo.
const ExportToAnnotation = "networking.istio.io/exportTo"
