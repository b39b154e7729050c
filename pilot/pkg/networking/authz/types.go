package authz

import (
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// Policy is one security.istio.io AuthorizationPolicy as the translator
// reads it.
type Policy struct {
	Name      string
	Namespace string
	// CreationTime orders policies as istiod does (sortConfigByCreationTime:
	// oldest first, then name, then namespace), which decides nothing of
	// the RBAC semantics but the order of the applied list.
	CreationTime time.Time
	// Annotations are read for istio.io/dry-run.
	Annotations map[string]string
	Spec        *securityv1beta1.AuthorizationPolicy
}

// ClusterResolver names the Envoy cluster of an extension provider's
// service ("ns/host" or "host", as the mesh config writes it) and port,
// as istiod's model.LookupCluster does, or fails when the service does not
// exist.
type ClusterResolver func(service string, port uint32) (clusterName string, err error)

// Input is everything one gateway proxy's authorization depends on.
type Input struct {
	// Policies are all AuthorizationPolicy objects, in any order.
	Policies []Policy
	// RootNamespace overrides the mesh config's rootNamespace when set.
	RootNamespace string
	// Proxy is the gateway proxy: namespace, labels, Gateway API name.
	Proxy policyattach.Proxy
	// Mesh is the mesh config: trust domain and aliases, and the
	// extension providers CUSTOM policies name. Nil means istiod's
	// defaults.
	Mesh *mesh.Config
	// Clusters resolves CUSTOM providers' services. Nil resolves none, so
	// every CUSTOM policy denies what it matches.
	Clusters ClusterResolver
	// TCP asks for the network filters of TCP and TLS-passthrough filter
	// chains as well (istiod's BuildTCP). Without it Result.TCPFilters is
	// empty and HTTP-only fields are not reported for TCP.
	TCP bool
	// TrustedHops tells that the gateway takes the client address from
	// X-Forwarded-For (numTrustedProxies > 0) or the PROXY protocol, so
	// that remoteIpBlocks (Envoy's remote_ip) differ from ipBlocks
	// (direct_remote_ip, the peer). It changes no output, as in istiod; it
	// only turns on the warning for ipBlocks that likely meant
	// remoteIpBlocks.
	TrustedHops bool
	// Routes are the route objects this gateway serves, for policies that
	// target a route (beyond istiod); none means no route-level policy
	// applies.
	Routes []policyattach.RouteRef
}

// Result is the authorization of one gateway proxy, as istiod 1.29 builds
// it. Its protos are freshly built: the caller may keep them.
type Result struct {
	// CustomHTTPFilters go first in the HTTP connection manager, before
	// jwt_authn (istiod's order): per CUSTOM provider an RBAC filter that
	// only marks what the policies match, then the provider's ext_authz
	// filter, gated on that mark; or, for a provider that cannot be
	// built, an RBAC filter denying what its policies match.
	CustomHTTPFilters []*hcmv3.HttpFilter
	// HTTPFilters go after jwt_authn: one RBAC filter each for AUDIT, DENY
	// and ALLOW policies, in that order, as istiod's builder emits them.
	HTTPFilters []*hcmv3.HttpFilter
	// CustomTCPFilters and TCPFilters go before tcp_proxy on TCP and
	// TLS-passthrough filter chains (only with Input.TCP), in that order:
	// CUSTOM's (none for an HTTP provider, as in istiod), then AUDIT, DENY,
	// ALLOW.
	CustomTCPFilters []*listenerv3.Filter
	TCPFilters       []*listenerv3.Filter
	// RouteConfigs holds, for each served route (of Input.Routes) with
	// route-level policies, the typed_per_filter_config entries (filter
	// name -> RBACPerRoute) to put on every Envoy route generated from
	// that object. Their filters are at the end of HTTPFilters.
	RouteConfigs map[policyattach.RouteRef]map[string]*anypb.Any
	// Applied are the policies that apply to the proxy, in istiod's order
	// (root namespace first, each namespace by creation time), then the
	// route-level ones, sorted.
	Applied []config.Key
	// Problems name each policy and field that could not be served as
	// written, and what was done instead (always narrower for ALLOW,
	// wider for DENY). Warnings (Warning set) change nothing.
	Problems []*config.Error
}

// CreationKey orders policies (policyattach.SortByCreation).
func (p Policy) CreationKey() (time.Time, string, string) { return p.CreationTime, p.Name, p.Namespace }
