package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/listener"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// upstreamCredential is one credentialName of a DestinationRule's tls
// settings and what the clusters using it fetch: the client certificate
// (MUTUAL) and the CA that verifies the upstream (unless
// insecureSkipVerify).
type upstreamCredential struct {
	rule     *config.Config
	field    string
	cert, ca bool
	cred     model.Credential
}

// BuildUpstreamSecrets returns the SDS secrets the clusters of push fetch
// for DestinationRule credentialNames, for the proxies of scope, named as
// istiod names them and as the clusters reference them:
// "kubernetes://NAME" (client certificate, MUTUAL) and
// "kubernetes://NAME-cacert" (CA and CRL; SIMPLE and MUTUAL unless
// insecureSkipVerify), or with "NAMESPACE/" when the credentialName names
// one. They follow the rule of the Gateways' secrets: resolved in the
// scope's namespace, and each Secret checked with scope.Refusal (for the
// DestinationRule naming it) before it is read. A
// Secret refused is returned as a refusal, one missing or unusable is
// reported at the rule's field; either way the clusters naming it wait
// for it and the rest of the group is served.
func BuildUpstreamSecrets(push *model.PushContext, store model.SecretStore, scope model.SecretScope) ([]*tlsv3.Secret, []model.SecretRefusal, []*config.Error) {
	creds, errs := upstreamCredentials(push)
	var out []*tlsv3.Secret
	var refused []model.SecretRefusal
	for _, name := range slices.Sorted(maps.Keys(creds)) {
		c := creds[name]
		// The first DestinationRule naming the resource is its owner; the
		// rule for Istio config depends only on the proxy's namespace, so
		// every rule naming the same resource is entitled alike.
		scope := scope.For(model.SecretOwner{Key: c.rule.Key(), Source: c.rule.Source})
		ref := c.cred.Resolve(scope.Namespace())
		secret := ref.String()
		if ref.Namespace == "" {
			secret = ref.Name + " of the proxy's namespace"
		}
		// add keeps sec, or reports why the scope's proxies do not get
		// resource.
		add := func(resource string, sec *tlsv3.Secret, problem, refusal string) {
			switch {
			case refusal != "":
				refused = append(refused, model.SecretRefusal{Resource: resource, Secret: secret,
					DestinationRule: c.rule.Namespace + "/" + c.rule.Name, Field: c.field, Reason: refusal})
				errs = append(errs, &config.Error{Source: c.rule.Source, Key: c.rule.Key(), Field: c.field,
					Message: fmt.Sprintf("Secret %s (%s) is not sent to %s: %s; clusters using it wait for it", secret, resource, scope, refusal)})
			case problem != "":
				errs = append(errs, &config.Error{Source: c.rule.Source, Key: c.rule.Key(), Field: c.field,
					Message: fmt.Sprintf("for %s: %s; clusters using it wait for it", scope, problem)})
			default:
				out = append(out, sec)
			}
		}
		if scope.Identity == nil {
			// Nothing is read for unauthenticated proxies.
			why := scope.Refusal(ref)
			if c.cert {
				add(c.cred.ResourceName, nil, "", why)
			}
			if c.ca {
				add(c.cred.CAResourceName(), nil, "", why)
			}
			continue
		}
		if c.cert {
			// Refused before it is read: the refusal reads the same
			// whether the Secret exists or not.
			var sec *tlsv3.Secret
			problem, why := "", scope.Refusal(ref)
			if why == "" {
				sec, problem = listener.LoadKeyPair(c.cred.ResourceName, ref, store)
				if problem != "" {
					problem = fmt.Sprintf("Secret %s %s", ref, problem)
				}
			}
			add(c.cred.ResourceName, sec, problem, why)
		}
		if c.ca {
			sec, problem, why, from := listener.CASecret(c.cred.CAResourceName(), ref, store, scope.Refusal)
			if why != "" && from != ref {
				// The CA's own Secret (NAME-cacert) was refused.
				secret = from.String()
			}
			add(c.cred.CAResourceName(), sec, problem, why)
		}
	}
	slices.SortFunc(out, func(a, b *tlsv3.Secret) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, refused, errs
}

// upstreamCredentials collects the DestinationRules' credentialNames of
// SIMPLE and MUTUAL TLS by resource name, the first rule naming each kept
// for messages; a credentialName that does not parse is reported.
func upstreamCredentials(push *model.PushContext) (map[string]*upstreamCredential, []*config.Error) {
	creds := map[string]*upstreamCredential{}
	var errs []*config.Error
	for i := range push.DestinationRules() {
		dr := &push.DestinationRules()[i]
		spec := dr.Spec.(*networking.DestinationRule)
		note := func(tp *networking.TrafficPolicy, path string) {
			visit := func(t *networking.ClientTLSSettings, f string) {
				name := t.GetCredentialName()
				mode := t.GetMode()
				if name == "" || (mode != networking.ClientTLSSettings_SIMPLE && mode != networking.ClientTLSSettings_MUTUAL) {
					return
				}
				if model.IsBackendTLSCredential(name) {
					// A BackendTLSPolicy's CA, in the cluster itself
					// (cluster.backendTLSCA): no Secret to serve.
					return
				}
				cred, err := model.ParseCredentialName(name)
				if err != nil {
					errs = append(errs, &config.Error{Source: dr.Source, Key: dr.Key(), Field: f + ".credentialName", Message: err.Error()})
					return
				}
				if cred.UpstreamNamespaceError() != "" {
					// Reported by the cluster builder, which builds no
					// cluster naming it: nothing to serve.
					return
				}
				c := creds[cred.ResourceName]
				if c == nil {
					c = &upstreamCredential{rule: dr, field: f + ".credentialName", cred: cred}
					creds[cred.ResourceName] = c
				}
				c.cert = c.cert || mode == networking.ClientTLSSettings_MUTUAL
				c.ca = c.ca || !t.GetInsecureSkipVerify().GetValue()
			}
			visit(tp.GetTls(), path+".tls")
			for j, pl := range tp.GetPortLevelSettings() {
				visit(pl.GetTls(), fmt.Sprintf("%s.portLevelSettings[%d].tls", path, j))
			}
		}
		note(spec.GetTrafficPolicy(), "spec.trafficPolicy")
		for j, s := range spec.GetSubsets() {
			note(s.GetTrafficPolicy(), fmt.Sprintf("spec.subsets[%d].trafficPolicy", j))
		}
	}
	return creds, errs
}

// upstreamSecretsFor reads the DestinationRule credentials for the
// proxies of scope that the Gateways select, as the Gateways' own: in the
// proxies' namespace (model.ScopedGatewayGroupKey keys groups by it when
// DestinationRules name credentials). Without Gateways or Secrets there
// is nothing to serve them to, or from.
func upstreamSecretsFor(push *model.PushContext, gateways []config.Config, store model.SecretStore, scope model.SecretScope) ([]*tlsv3.Secret, []model.SecretRefusal, []*config.Error) {
	if len(gateways) == 0 || store == nil {
		return nil, nil, nil
	}
	out, refused, errs := BuildUpstreamSecrets(push, store, scope)
	sec, refusal, err := backendClientSecret(push, gateways, store, scope)
	if sec != nil && !slices.ContainsFunc(out, func(s *tlsv3.Secret) bool { return s.GetName() == sec.GetName() }) {
		out = append(out, sec)
		slices.SortFunc(out, func(a, b *tlsv3.Secret) int { return strings.Compare(a.GetName(), b.GetName()) })
	}
	if refusal != nil {
		refused = append(refused, *refusal)
	}
	if err != nil {
		errs = append(errs, err)
	}
	return out, refused, errs
}

// backendClientSecret reads the backend client certificate the view's
// proxies present (model.PushContext.BackendClientCertificate), as the
// Gateway carrying it owns it: the Gateway API's rule for a generated
// Gateway (its own proxies; another namespace's Secret only when a
// ReferenceGrant lends it), Istio config's for any other. The clusters
// naming it wait for it when it is refused or unusable, which is
// reported against that Gateway.
func backendClientSecret(push *model.PushContext, gateways []config.Config, store model.SecretStore, scope model.SecretScope) (*tlsv3.Secret, *model.SecretRefusal, *config.Error) {
	name := push.BackendClientCertificate()
	if name == "" {
		return nil, nil, nil
	}
	i := slices.IndexFunc(gateways, func(gw config.Config) bool {
		return gw.Annotations[model.BackendClientCertificateAnnotation] == name
	})
	cred, perr := model.ParseCredentialName(name)
	if i < 0 || perr != nil {
		return nil, nil, nil // not this group's (the view is the proxy's Gateways')
	}
	owner := gateways[i]
	scope = scope.For(model.SecretOwner{Key: owner.Key(), Source: owner.Source})
	ref := cred.Resolve(scope.Namespace())
	field := "metadata.annotations[" + model.BackendClientCertificateAnnotation + "]"
	if why := scope.Refusal(ref); why != "" {
		return nil, &model.SecretRefusal{Resource: cred.ResourceName, Secret: ref.String(), Gateway: owner.Namespace + "/" + owner.Name, Server: field, Reason: why},
			&config.Error{Source: owner.Source, Key: owner.Key(), Field: field,
				Message: fmt.Sprintf("backend client certificate Secret %s is not sent to %s: %s; clusters presenting it wait for it", ref, scope, why)}
	}
	sec, problem := listener.LoadKeyPair(cred.ResourceName, ref, store)
	if problem != "" {
		return nil, nil, &config.Error{Source: owner.Source, Key: owner.Key(), Field: field,
			Message: fmt.Sprintf("for %s: backend client certificate Secret %s %s; clusters presenting it wait for it", scope, ref, problem)}
	}
	return sec, nil, nil
}
