package gatewayapi

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// BackendTLSPolicy conversion follows istiod 1.29's
// (pilot/pkg/config/kube/gateway/backend_policies.go,
// BackendTLSPolicyCollection and DestinationRuleCollection): each policy
// targeting a Service becomes TLS settings (mode SIMPLE, sni the
// validation hostname, the CA) of one DestinationRule per Service, in the
// Service's namespace, for the host NAME.NAMESPACE.svc.SUFFIX (or one per
// host of a targeted ServiceEntry): the Service-wide trafficPolicy.tls
// for a targetRef without sectionName, portLevelSettings for the port a
// sectionName names. The rule has no
// exportTo and no workloadSelector, and is dated the zero time, so, as
// istiod's generated rules, it is the oldest rule of its host and
// namespace: a user's DestinationRule for the same host in the same
// namespace keeps its subsets but not its traffic policy, and one in a
// gateway's own namespace takes precedence over it (istiod's lookup
// order, model/destination_rules.go).
//
// Two deliberate differences from istiod: without subjectAltNames the
// hostname is also the name the certificate is verified against (the
// specification's rule; istiod checks the chain only), and every valid
// caCertificateRef is trusted (istiod reads the first alone).

// BackendTLSRuleName is the name of the DestinationRule generated for the
// BackendTLSPolicies targeting Service service.
func BackendTLSRuleName(service string) string {
	return generatedName(service + "-backendtls-" + NameSuffix)
}

// btlsRec is what conversion decided for one BackendTLSPolicy, for its
// status (backendtls_status.go).
type btlsRec struct {
	policy *gw.BackendTLSPolicy
	// accepted, resolved: the policy-wide outcome, nil when true.
	accepted, resolved *cond
	targets            []btlsTarget
}

// btlsTarget is the outcome of one targetRef.
type btlsTarget struct {
	// service is the Service's name, in the policy's namespace; for a
	// ServiceEntry target, hosts are its hosts instead (what routes name
	// as backends of kind Hostname).
	service string
	hosts   []string
	// notFound says why the target is not served (Accepted False,
	// TargetNotFound); conflicted names the policy that takes precedence
	// (Accepted False, Conflicted).
	notFound, conflicted string
}

// btlsSlot is one place a policy's TLS settings go: a Service or a
// ServiceEntry, and a port name or "" for all its ports.
type btlsSlot struct {
	kind    string
	target  types.NamespacedName
	section string
}

// btlsRuleKey names one generated DestinationRule: its namespace and
// name, and the host it is for.
type btlsRuleKey struct {
	namespace, name, host string
}

// btlsRule collects the TLS settings of one generated DestinationRule.
type btlsRule struct {
	key    btlsRuleKey
	source string // the oldest contributing policy
	tls    *networking.ClientTLSSettings
	ports  map[uint32]*networking.ClientTLSSettings
	cas    map[string]string // credentialName -> PEM bundle
}

// backendTLSPolicies converts the BackendTLSPolicies into DestinationRules,
// oldest policy first: of two policies on one Service and sectionName, the
// older (then the first by namespace/name) takes precedence, the
// Gateway API's rule, and the other is Conflicted.
func (c *converter) backendTLSPolicies() []config.Config {
	if len(c.in.BackendTLSPolicies) == 0 {
		return nil
	}
	policies := slices.Clone(c.in.BackendTLSPolicies)
	slices.SortFunc(policies, func(a, b *gw.BackendTLSPolicy) int { return compareObjects(a, b) })
	claimed := map[btlsSlot]string{}
	rules := map[btlsRuleKey]*btlsRule{}
	// unmet are the Services and ServiceEntry hosts whose applied policy
	// asks for what Wayfinder cannot do, by the policy's Source.
	unmet := unmetTargets{services: map[types.NamespacedName]string{}, hosts: map[string]string{}}
	for _, p := range policies {
		rec := &btlsRec{policy: p}
		c.btlsRecs()[p.Namespace+"/"+p.Name] = rec
		src := Source(schema.BackendTLSPolicyKind.Name, p)
		tls, caName, caPEM := c.backendTLSSettings(p, rec, src)
		if len(p.Spec.Options) > 0 {
			c.warnf(src, "spec.options", "options are not served; %d ignored", len(p.Spec.Options))
		}
		for i, t := range p.Spec.TargetRefs {
			field := fmt.Sprintf("spec.targetRefs[%d]", i)
			tr := btlsTarget{}
			port, keys, ok := c.backendTLSTarget(p, t, &tr, src, field)
			if !ok {
				rec.targets = append(rec.targets, tr)
				continue
			}
			slot := btlsSlot{kind: string(t.Kind), target: types.NamespacedName{Namespace: p.Namespace, Name: string(t.Name)}, section: string(deref(t.SectionName, ""))}
			if winner, taken := claimed[slot]; taken {
				tr.conflicted = winner
				c.errorf(src, field, "%s already sets TLS for %s %s%s, and takes precedence (older, or first by name); policy not applied there",
					winner, slot.kind, slot.target, sectionSuffix(slot.section))
				rec.targets = append(rec.targets, tr)
				continue
			}
			claimed[slot] = src
			rec.targets = append(rec.targets, tr)
			if rec.accepted != nil && rec.accepted.reason == string(gw.PolicyReasonInvalid) {
				unmet.add(tr, p.Namespace, src)
			}
			for _, k := range keys {
				r := rules[k]
				if r == nil {
					r = &btlsRule{key: k, source: src, ports: map[uint32]*networking.ClientTLSSettings{}, cas: map[string]string{}}
					rules[k] = r
				}
				if caPEM != "" {
					r.cas[caName] = caPEM
				}
				if slot.section == "" {
					r.tls = tls
				} else {
					r.ports[port] = tls
				}
			}
		}
	}
	c.unmetBackendTLS(unmet)
	out := make([]config.Config, 0, len(rules))
	for _, r := range rules {
		out = append(out, c.backendTLSRule(r))
	}
	return out
}

func (c *converter) btlsRecs() map[string]*btlsRec {
	if c.st.btls == nil {
		c.st.btls = map[string]*btlsRec{}
	}
	return c.st.btls
}

// groupKind names a kind as Kubernetes does: "Kind" in the core group,
// "Kind.group" in any other.
func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

func sectionSuffix(section string) string {
	if section == "" {
		return ""
	}
	return " port " + section
}

// backendTLSTarget resolves one targetRef: a Service of the policy's
// namespace (one rule, for its host) or, as istiod 1.29 allows, a
// ServiceEntry of it (one rule per host, as istiod generates them), and
// the port its sectionName names (0 without one).
func (c *converter) backendTLSTarget(p *gw.BackendTLSPolicy, t gw.LocalPolicyTargetReferenceWithSectionName, tr *btlsTarget, src, field string) (uint32, []btlsRuleKey, bool) {
	fail := func(f, format string, args ...any) (uint32, []btlsRuleKey, bool) {
		tr.notFound = fmt.Sprintf(format, args...)
		c.errorf(src, f, "%s; target skipped", tr.notFound)
		return 0, nil, false
	}
	type port struct {
		name   string
		number uint32
	}
	var ports []port
	var keys []btlsRuleKey
	switch {
	case t.Group == "" && t.Kind == "Service":
		tr.service = string(t.Name)
		var svc *corev1.Service
		if c.in.Services != nil {
			svc = c.in.Services(p.Namespace, string(t.Name))
		}
		if svc == nil {
			return fail(field, "Service %s/%s does not exist", p.Namespace, t.Name)
		}
		for _, sp := range svc.Spec.Ports {
			ports = append(ports, port{sp.Name, uint32(sp.Port)})
		}
		keys = []btlsRuleKey{{namespace: p.Namespace, name: BackendTLSRuleName(string(t.Name)),
			host: string(t.Name) + "." + p.Namespace + ".svc." + c.opts.DomainSuffix}}
	case t.Group == IstioGroup && t.Kind == "ServiceEntry":
		var se *networking.ServiceEntry
		for _, e := range c.in.ServiceEntries {
			if e.Namespace == p.Namespace && e.Name == string(t.Name) {
				se, _ = e.Spec.(*networking.ServiceEntry)
				break
			}
		}
		if se == nil {
			return fail(field, "ServiceEntry %s/%s does not exist", p.Namespace, t.Name)
		}
		for _, sp := range se.GetPorts() {
			ports = append(ports, port{sp.GetName(), sp.GetNumber()})
		}
		for _, h := range se.GetHosts() {
			tr.hosts = append(tr.hosts, strings.ToLower(h))
			keys = append(keys, btlsRuleKey{namespace: p.Namespace,
				name: generatedName(string(t.Name) + "-" + hostLabel(strings.ToLower(h)) + "-backendtls-" + NameSuffix), host: h})
		}
	default:
		return fail(field, "target kind %s is not supported; only Services and ServiceEntries (%s) are", groupKind(string(t.Group), string(t.Kind)), IstioGroup)
	}
	if t.SectionName == nil || *t.SectionName == "" {
		return 0, keys, true
	}
	for _, sp := range ports {
		if sp.name == string(*t.SectionName) {
			return sp.number, keys, true
		}
	}
	return fail(field+".sectionName", "sectionName %q is not a port of %s %s/%s", *t.SectionName, t.Kind, p.Namespace, t.Name)
}

// backendTLSSettings builds a policy's TLS settings and resolves its CA:
// the system roots for wellKnownCACertificates System, else the PEM
// bundle of its caCertificateRefs (ConfigMaps of the policy's namespace,
// key ca.crt) under the credentialName configmap://NAMESPACE/NAME[+NAME...].
// Without any valid CA the credentialName is model.InvalidCredentialName,
// whose clusters are not built: requests fail rather than go unverified.
func (c *converter) backendTLSSettings(p *gw.BackendTLSPolicy, rec *btlsRec, src string) (tls *networking.ClientTLSSettings, caName, caPEM string) {
	v := p.Spec.Validation
	tls = &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, Sni: string(v.Hostname)}
	for _, san := range v.SubjectAltNames {
		switch san.Type {
		case gw.HostnameSubjectAltNameType:
			tls.SubjectAltNames = append(tls.SubjectAltNames, string(san.Hostname))
		case gw.URISubjectAltNameType:
			tls.SubjectAltNames = append(tls.SubjectAltNames, string(san.URI))
		}
	}
	if len(tls.SubjectAltNames) == 0 && v.Hostname != "" {
		// The hostname authenticates the backend unless subjectAltNames
		// are given (the specification; see above).
		tls.SubjectAltNames = []string{string(v.Hostname)}
	}
	if wk := v.WellKnownCACertificates; wk != nil && *wk != "" {
		if *wk != gw.WellKnownCACertificatesSystem {
			rec.accepted = &cond{reason: string(gw.PolicyReasonInvalid), message: fmt.Sprintf("wellKnownCACertificates %q is not supported; only System is", *wk)}
			c.errorf(src, "spec.validation.wellKnownCACertificates", "%s; requests to its targets fail", rec.accepted.message)
			tls.CredentialName = model.InvalidCredentialName
		}
		// System: no credentialName, which verifies against the
		// proxy's system roots.
		return tls, "", ""
	}
	var names, bundles []string
	for i, ref := range v.CACertificateRefs {
		field := fmt.Sprintf("spec.validation.caCertificateRefs[%d]", i)
		pemCA, reason, msg := c.caCertificate(p.Namespace, ref)
		if reason != "" {
			if rec.resolved == nil {
				rec.resolved = &cond{reason: reason, message: msg}
			}
			c.errorf(src, field, "%s", msg)
			continue
		}
		names = append(names, string(ref.Name))
		bundles = append(bundles, pemCA)
	}
	if len(names) == 0 {
		msg := "no caCertificateRef is valid"
		if rec.resolved != nil {
			msg = rec.resolved.message
		}
		rec.accepted = &cond{reason: string(gw.BackendTLSPolicyReasonNoValidCACertificate), message: msg}
		tls.CredentialName = model.InvalidCredentialName
		return tls, "", ""
	}
	caName = model.ConfigMapCredentialPrefix + p.Namespace + "/" + strings.Join(names, "+")
	tls.CredentialName = caName
	return tls, caName, strings.Join(bundles, "")
}

// caCertificate reads the CA bundle a caCertificateRef names, or says why
// not (a ResolvedRefs reason and a message). Only the certificates are
// kept, re-encoded: anything else in the ConfigMap never reaches a proxy.
// Messages name the object and key, never its content.
func (c *converter) caCertificate(ns string, ref gw.LocalObjectReference) (string, string, string) {
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		// istiod 1.29 reads ConfigMaps alone (a Secret would need its
		// SDS authorization, and must never lend its private key).
		return "", string(gw.BackendTLSPolicyReasonInvalidKind),
			fmt.Sprintf("caCertificateRef kind %s is not supported; only ConfigMaps are", groupKind(string(ref.Group), string(ref.Kind)))
	}
	c.st.referConfigMap(ns, string(ref.Name))
	var data string
	found := false
	if c.in.ConfigMaps != nil {
		if cm := c.in.ConfigMaps(ns, string(ref.Name)); cm != nil {
			found = true
			data = cm.Data["ca.crt"]
		}
	}
	invalid := string(gw.BackendTLSPolicyReasonInvalidCACertificateRef)
	switch {
	case !found:
		return "", invalid, fmt.Sprintf("ConfigMap %s/%s does not exist", ns, ref.Name)
	case data == "":
		return "", invalid, fmt.Sprintf("ConfigMap %s/%s has no ca.crt", ns, ref.Name)
	}
	out, err := parseCABundle(data)
	if err != nil {
		return "", invalid, fmt.Sprintf("ConfigMap %s/%s ca.crt: %v", ns, ref.Name, err)
	}
	return out, "", ""
}

// parseCABundle keeps the CERTIFICATE blocks of a PEM bundle, re-encoded,
// each of which must parse; at least one is needed. Envoy rejects the
// cluster or listener whose CA it cannot read, so it is checked here
// (BackendTLSPolicy and tls.frontend CAs); anything else in the data never
// reaches a proxy.
func parseCABundle(data string) (string, error) {
	rest := []byte(data)
	var out []byte
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return "", fmt.Errorf("certificate %d does not parse: %v", n+1, err)
		}
		n++
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})...)
	}
	if n == 0 {
		return "", errors.New("holds no PEM certificate")
	}
	return string(out), nil
}

// backendTLSRule builds the DestinationRule of one host.
func (c *converter) backendTLSRule(r *btlsRule) config.Config {
	spec := &networking.DestinationRule{
		Host:          r.key.host,
		TrafficPolicy: &networking.TrafficPolicy{Tls: r.tls},
	}
	for _, port := range slices.Sorted(maps.Keys(r.ports)) {
		spec.TrafficPolicy.PortLevelSettings = append(spec.TrafficPolicy.PortLevelSettings,
			&networking.TrafficPolicy_PortTrafficPolicy{Port: &networking.PortSelector{Number: port}, Tls: r.ports[port]})
	}
	// The marker says the TLS settings are a BackendTLSPolicy's, which
	// a Gateway's backend client certificate is presented on.
	ann := make(map[string]string, len(r.cas)+1)
	ann[model.BackendTLSPolicyAnnotation] = r.source
	for name, ca := range r.cas {
		ann[model.BackendTLSCAAnnotationPrefix+name] = ca
	}
	// CreationTimestamp stays zero: the oldest rule of its host, as
	// istiod's generated rules are.
	return config.Config{
		Meta: config.Meta{Kind: schema.DestinationRule, Namespace: r.key.namespace, Name: r.key.name,
			Annotations: ann, Source: r.source},
		Spec: spec,
	}
}
