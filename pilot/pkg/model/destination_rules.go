package model

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// DestinationRules are looked up the way istiod 1.29 looks them up
// (PushContext.setDestinationRules and destinationRule, SidecarScope's
// DestinationRule): for a proxy of namespace P and a service of namespace
// S, the rules of P visible to P, else those of S exported to P, else those
// of the root namespace exported to P. A rule of any other namespace never
// applies to that proxy and service, so a tenant's rule (host "*" even) can
// change only what its own namespace's proxies do. Within a namespace the
// rule of the most specific host wins, and rules of one namespace for the
// same host (and the same exportTo) are merged, oldest first.

// mergedRule is one or more DestinationRules of one namespace for the same
// host, merged (istiod's ConsolidatedDestRule).
type mergedRule struct {
	exportTo exportSet
	// rule is the oldest rule, or a copy of it carrying the subsets of
	// the later ones (and their top-level traffic policy if it had none).
	rule *config.Config
	// from are the rules merged into it, oldest first.
	from []config.Key
}

// hostRules are the merged rules of one namespace by host: exact hosts and
// wildcards apart, as istiod keeps them.
type hostRules struct {
	specific map[string][]*mergedRule
	wildcard map[string][]*mergedRule
}

func newHostRules() *hostRules {
	return &hostRules{specific: map[string][]*mergedRule{}, wildcard: map[string][]*mergedRule{}}
}

// drIndex is istiod's destinationRuleIndex.
type drIndex struct {
	// namespaceLocal are the rules of each namespace that its own proxies
	// see (exportTo empty, "*", "." or naming it).
	namespaceLocal map[string]*hostRules
	// exported are the rules of each namespace that other namespaces may
	// see, filtered by exportTo at lookup.
	exported map[string]*hostRules
	// rootLocal are the root namespace's rules exported to it alone.
	rootLocal *hostRules
	// audience are the namespaces whose proxies can see a different set
	// of rules than a namespace nothing names (see PushContext.ViewKey).
	audience map[string]bool
	// selectorNamespaces have rules with a workloadSelector, which only
	// their own namespace's proxies with matching labels get.
	selectorNamespaces map[string]bool
	// errors are the problems found indexing, each once (a rule is
	// merged into its namespace's own rules and its exported ones).
	errors   []*config.Error
	reported map[string]bool
}

func (ix *drIndex) report(e *config.Error) {
	if k := e.Error(); !ix.reported[k] {
		ix.reported[k] = true
		ix.errors = append(ix.errors, e)
	}
}

// indexDestinationRules builds the index from every valid DestinationRule,
// following istiod's setDestinationRules and mergeDestinationRule (with
// ENABLE_ENHANCED_DESTINATIONRULE_MERGE, on by default).
func indexDestinationRules(rules []config.Config, sc Scoping) *drIndex {
	ix := &drIndex{namespaceLocal: map[string]*hostRules{}, exported: map[string]*hostRules{}, rootLocal: newHostRules(),
		audience: map[string]bool{}, selectorNamespaces: map[string]bool{}, reported: map[string]bool{}}
	rules = slices.Clone(rules)
	// istiod's order: rules with a workloadSelector first, then oldest
	// first, then by name, then namespace.
	slices.SortStableFunc(rules, func(a, b config.Config) int {
		as, bs := a.Spec.(*networking.DestinationRule).GetWorkloadSelector() != nil, b.Spec.(*networking.DestinationRule).GetWorkloadSelector() != nil
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp), strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	for i := range rules {
		c := &rules[i]
		spec := c.Spec.(*networking.DestinationRule)
		ns := c.Namespace
		host := ResolveShortname(spec.GetHost(), ns, sc.DomainSuffix)
		var export exportSet
		if spec.GetWorkloadSelector() == nil {
			export = newExportSet(spec.GetExportTo())
		} else {
			// A rule with a workloadSelector is never exported.
			export = newExportSet([]string{ExportPrivate})
			ix.selectorNamespaces[ns] = true
		}
		if len(export) == 0 || export.has(ExportPublic) || export.has(ExportPrivate) || export.has(ns) {
			if ix.namespaceLocal[ns] == nil {
				ix.namespaceLocal[ns] = newHostRules()
			}
			ix.merge(ix.namespaceLocal[ns], c, host, export)
			ix.audience[ns] = true
		}
		privateOnly := (len(export) == 0 && slices.Contains(sc.DefaultDestinationRuleExportTo, ExportPrivate)) ||
			(len(export) == 1 && (export.has(ExportPrivate) || export.has(ns)))
		switch {
		case !privateOnly:
			if ix.exported[ns] == nil {
				ix.exported[ns] = newHostRules()
			}
			ix.merge(ix.exported[ns], c, host, export)
			for _, n := range export.named() {
				ix.audience[n] = true
			}
		case ns == sc.RootNamespace:
			ix.merge(ix.rootLocal, c, host, export)
		}
	}
	if len(ix.namespaceLocal[sc.RootNamespace].all()) > 0 || len(ix.rootLocal.all()) > 0 {
		ix.audience[sc.RootNamespace] = true
	}
	return ix
}

// all lists every merged rule of h (nil-safe), for tests and counting.
func (h *hostRules) all() []*mergedRule {
	if h == nil {
		return nil
	}
	var out []*mergedRule
	for _, k := range slices.Sorted(maps.Keys(h.specific)) {
		out = append(out, h.specific[k]...)
	}
	for _, k := range slices.Sorted(maps.Keys(h.wildcard)) {
		out = append(out, h.wildcard[k]...)
	}
	return out
}

// ResolveShortname turns a short host name ("reviews", no dot) into the
// fully qualified name of that service in namespace under the cluster
// domain domainSuffix ("reviews.NAMESPACE.svc.DOMAINSUFFIX"), as istiod's
// ResolveShortnameToFQDN. "*", names with a dot and IP addresses are
// returned unchanged (lower-cased). Translators call
// PushContext.ResolveShortname, which supplies the process's suffix.
func ResolveShortname(host, namespace, domainSuffix string) string {
	host = strings.ToLower(host)
	if host == "" || host == "*" || strings.Contains(host, ".") {
		return host
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return host
	}
	return host + "." + namespace + ".svc." + domainSuffix
}

// merge adds rule c for host to h, merging it into the rules already there
// for that host as istiod's mergeDestinationRule does: a later rule with
// the same exportTo (and the same workloadSelector, or none on either)
// adds its subsets of new names and, where the older one has none, its
// top-level traffic policy; anything else it says is ignored (reported).
// A later rule whose exportTo differs is kept apart; one whose exportTo
// is a superset of an older one's is also merged into that one.
func (ix *drIndex) merge(h *hostRules, c *config.Config, host string, export exportSet) {
	byHost := h.specific
	if strings.HasPrefix(host, "*") {
		byHost = h.wildcard
	}
	list, exists := byHost[host]
	if !exists {
		byHost[host] = []*mergedRule{{exportTo: export, rule: c, from: []config.Key{c.Key()}}}
		return
	}
	rule := c.Spec.(*networking.DestinationRule)
	appendSeparately := true
	for _, m := range list {
		switch {
		case export.equal(m.exportTo):
			appendSeparately = false
		case len(m.exportTo) > 0 && export.supersetOf(m.exportTo):
			appendSeparately = true
		default:
			appendSeparately = true
			continue
		}
		existing := m.rule.Spec.(*networking.DestinationRule)
		bothWithout := rule.GetWorkloadSelector() == nil && existing.GetWorkloadSelector() == nil
		bothWith := rule.GetWorkloadSelector() != nil && existing.GetWorkloadSelector() != nil
		same := maps.Equal(rule.GetWorkloadSelector().GetMatchLabels(), existing.GetWorkloadSelector().GetMatchLabels())
		if bothWith && !same {
			appendSeparately = true
			continue
		}
		if bothWithout || (bothWith && same) {
			appendSeparately = false
		}
		ix.mergeInto(m, c)
	}
	if appendSeparately {
		byHost[host] = append(byHost[host], &mergedRule{exportTo: export, rule: c, from: []config.Key{c.Key()}})
	}
}

// mergeInto merges rule c into m (a copy: the store's objects are shared).
func (ix *drIndex) mergeInto(m *mergedRule, c *config.Config) {
	rule := c.Spec.(*networking.DestinationRule)
	copied := *m.rule
	merged := proto.Clone(m.rule.Spec.(*networking.DestinationRule)).(*networking.DestinationRule)
	copied.Spec = merged
	m.rule = &copied
	before := keyList(m.from)
	m.from = append(m.from, c.Key())
	have := map[string]bool{}
	for _, s := range merged.GetSubsets() {
		have[s.GetName()] = true
	}
	for i, s := range rule.GetSubsets() {
		if have[s.GetName()] {
			ix.report(&config.Error{Source: c.Source, Key: c.Key(), Field: fmt.Sprintf("spec.subsets[%d].name", i), Warning: true,
				Message: fmt.Sprintf("subset %q is already defined for host %s by the rules this one is merged with (%s); this subset is ignored", s.GetName(), rule.GetHost(), before)})
			continue
		}
		merged.Subsets = append(merged.Subsets, s)
	}
	switch {
	case merged.GetTrafficPolicy() == nil:
		merged.TrafficPolicy = rule.GetTrafficPolicy()
	case rule.GetTrafficPolicy() != nil:
		ix.report(&config.Error{Source: c.Source, Key: c.Key(), Field: "spec.trafficPolicy", Warning: true,
			Message: fmt.Sprintf("host %s already has a top-level traffic policy from the rules this one is merged with (%s); this traffic policy is ignored", rule.GetHost(), before)})
	}
}

// mostSpecific returns the rules of h for host: an exact match, else the
// most specific wildcard matching it (istiod's MostSpecificHostMatch).
func (h *hostRules) mostSpecific(host string) ([]*mergedRule, bool) {
	if h == nil {
		return nil, false
	}
	if strings.HasPrefix(host, "*") {
		if r, ok := h.wildcard[host]; ok {
			return r, true
		}
		return h.mostSpecificWildcard(host[1:])
	}
	if r, ok := h.specific[host]; ok {
		return r, true
	}
	return h.mostSpecificWildcard(host)
}

// mostSpecificWildcard picks the longest wildcard whose suffix needle has;
// between equal lengths the lexically smaller, so the choice never
// depends on map order (istiod's host.MoreSpecific).
func (h *hostRules) mostSpecificWildcard(needle string) ([]*mergedRule, bool) {
	best := ""
	for w := range h.wildcard {
		if !strings.HasSuffix(needle, w[1:]) {
			continue
		}
		if best == "" || len(w) > len(best) || (len(w) == len(best) && w < best) {
			best = w
		}
	}
	if best == "" {
		return nil, false
	}
	return h.wildcard[best], true
}

// lookup is istiod's PushContext.destinationRule: the merged rules for a
// service of namespace svcNS and hostname host, seen from a proxy of
// namespace proxyNS.
func (ix *drIndex) lookup(proxyNS, svcNS, host, root string) []*mergedRule {
	if proxyNS != root {
		if r, ok := ix.namespaceLocal[proxyNS].mostSpecific(host); ok {
			return r
		}
	} else if r, ok := ix.rootLocal.mostSpecific(host); ok {
		// A root-namespace proxy is meant by its namespace's private rules.
		return r
	}
	if svcNS != "" {
		if out := ix.exportedFrom(svcNS, host, proxyNS); len(out) > 0 {
			return out
		}
	}
	return ix.exportedFrom(root, host, proxyNS)
}

// exportedFrom is istiod's getExportedDestinationRuleFromNamespace: the
// most specific rules of owner exported to client.
func (ix *drIndex) exportedFrom(owner, host, client string) []*mergedRule {
	r, ok := ix.exported[owner].mostSpecific(host)
	if !ok {
		return nil
	}
	visible := func(m *mergedRule) bool {
		return len(m.exportTo) == 0 || m.exportTo.has(ExportPublic) || m.exportTo.has(client)
	}
	if !slices.ContainsFunc(r, func(m *mergedRule) bool { return !visible(m) }) {
		return r // all of them: no copy (the usual case, every push, every cluster)
	}
	var out []*mergedRule
	for _, m := range r {
		if visible(m) {
			out = append(out, m)
		}
	}
	return out
}

// pick is SidecarScope.DestinationRule for an outbound cluster: of the
// merged rules found, one with a workloadSelector of the proxy's own
// namespace matching its labels, else the last without a selector.
func pick(rules []*mergedRule, proxyNS string, labels map[string]string) *config.Config {
	var catchAll *config.Config
	for _, m := range rules {
		sel := m.rule.Spec.(*networking.DestinationRule).GetWorkloadSelector()
		if sel == nil {
			catchAll = m.rule
			continue
		}
		if m.rule.Namespace == proxyNS && SubsetLabelsMatch(sel.GetMatchLabels(), labels) {
			return m.rule
		}
	}
	return catchAll
}

// foreignRuleWarnings reports each rule that names (or, for a wildcard,
// matches) a service of another namespace while being neither of that
// namespace nor of the root namespace: istiod applies such a rule only to
// proxies of its own namespace, and so does Wayfinder. The rule is kept;
// the warning says whom it does not reach.
func foreignRuleWarnings(rules []config.Config, services []*Service, byHost map[string]*Service, root, domainSuffix string) []*config.Error {
	var out []*config.Error
	var namespaces []string // of every service, sorted: what host "*" matches
	for i := range rules {
		c := &rules[i]
		if c.Namespace == root {
			continue
		}
		host := ResolveShortname(c.Spec.(*networking.DestinationRule).GetHost(), c.Namespace, domainSuffix)
		var others []string
		total := -1 // len(others) unless set
		switch {
		case !strings.HasPrefix(host, "*"):
			if svc := byHost[host]; svc != nil && svc.Namespace != c.Namespace {
				others = append(others, svc.Namespace)
			}
		case host == "*":
			// Every tenant may have one: no scan of every service each.
			if namespaces == nil {
				namespaces = []string{}
				for _, svc := range services {
					namespaces = append(namespaces, svc.Namespace)
				}
				slices.Sort(namespaces)
				namespaces = slices.Compact(namespaces)
			}
			// The names the message shows, and how many there are.
			n := len(namespaces)
			if _, found := slices.BinarySearch(namespaces, c.Namespace); found {
				n--
			}
			for _, ns := range namespaces {
				if len(others) == 3 {
					break
				}
				if ns != c.Namespace {
					others = append(others, ns)
				}
			}
			total = n
		default:
			seen := map[string]bool{}
			for _, svc := range services {
				if svc.Namespace != c.Namespace && !seen[svc.Namespace] && strings.HasSuffix(svc.Hostname, host[1:]) {
					seen[svc.Namespace] = true
					others = append(others, svc.Namespace)
				}
			}
		}
		if len(others) == 0 {
			continue
		}
		slices.Sort(others)
		if total < 0 {
			total = len(others)
		}
		which := "namespace " + others[0]
		if total > 1 {
			which = "namespaces " + strings.Join(others[:min(3, len(others))], ", ")
			if total > 3 {
				which += fmt.Sprintf(" and %d more", total-3)
			}
		}
		out = append(out, &config.Error{Source: c.Source, Key: c.Key(), Field: "spec.host", Warning: true,
			Message: fmt.Sprintf("host %s matches services of %s: a DestinationRule applies to another namespace's service only for proxies of its own namespace (%s); other proxies use the rules of their own namespace, the service's, or the root namespace %s", host, which, c.Namespace, root)})
	}
	return out
}

// keyList names rules for messages: "DestinationRule ns/a, DestinationRule ns/b".
func keyList(keys []config.Key) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return strings.Join(out, ", ")
}
