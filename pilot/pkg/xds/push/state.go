package push

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/envoyfilter"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// State is what one push computed. Everything but Groups is fixed once
// built; Groups grows when a proxy with a new gateway configuration
// connects between pushes (written under the push lock and the server's
// lock, so readers holding either see a consistent map; see the package
// comment).
type State struct {
	Push *model.PushContext
	// Clusters and Endpoints are shared by every gateway view of the push.
	Clusters, Endpoints *snapshot.TypeSet
	// serviceErrors are those of the last service translation (clusters
	// and endpoints) and endpointErrors those of an endpoints-only push
	// since, kept for pushes that reuse them; with the push context's and
	// the groups' they are the push's errors (Translator.Errors).
	serviceErrors, endpointErrors []*config.Error
	// EndpointsOnly marks a push that rebuilt load assignments alone.
	EndpointsOnly bool
	Groups        map[string]*Group
	// upstream are the credentials the push's DestinationRules name,
	// computed once per push for the group keys.
	upstream []model.Credential
	// Views are the clusters and endpoints of the proxy views other than
	// the default one (model.PushContext.ViewKey: a namespace with
	// DestinationRules of its own, or one exportTo treats apart), built
	// when a group first needs them. Written and read under the push lock.
	Views map[string]*ServiceView
	// telemetry is each distinct proxy's telemetry and its key
	// (groups.go: withTelemetry), by what it depends on, so proxies alike
	// share one computation per push. Written and read under the push
	// lock.
	telemetry map[string]proxyTelemetry
	// security caches the gateway security by what it depends on of a
	// proxy (securityInputKey); written under the push lock.
	security map[string]*model.GatewaySecurity
	// securityFP is the push's securityFingerprint, once computed.
	securityFP *string
	// ef is the push's EnvoyFilters and their selections (envoyfilters.go).
	ef *efPush
	// efValues caches EnvoyFilter patch values for the push's groups.
	efValues *envoyfilter.Values
}

// ServiceView is the clusters and endpoints one proxy view gets instead
// of the push's shared ones.
type ServiceView struct {
	Clusters, Endpoints *snapshot.TypeSet
	errors              []*config.Error
}

// ProxylessKey is the group of every proxyless gRPC client. Gateway group
// keys are hex hashes or empty, so it cannot collide with one.
const ProxylessKey = "proxyless-grpc"

// Group is one distinct configuration (a gateway group, or the proxyless
// clients) and the view every proxy with it shares.
type Group struct {
	Key      string
	Gateways []config.Key
	// Telemetry is the access logging and tracing the group's listeners
	// were built with (nil for the proxyless group).
	Telemetry *model.GatewayTelemetry
	// Security is the authentication and authorization its listeners
	// were built with (nil: none applies).
	Security *model.GatewaySecurity
	// EnvoyFilters is what its EnvoyFilters' patches did (nil: none
	// applies).
	EnvoyFilters *EnvoyFilterReport
	// listeners, routes and secrets are the group's own translation, kept
	// so an endpoints-only push can reuse them; clusters is set only for
	// the proxyless group and for a gateway group whose EnvoyFilters patch
	// clusters (other gateway groups share the push's).
	listeners, routes, secrets, clusters *snapshot.TypeSet
	// View is nil when the group's resources could not be assembled into
	// a consistent view; its proxies keep what they have.
	View   *snapshot.View
	errors []*config.Error
	// Scope is whom the group's secrets are for, and Refused the secrets
	// its proxies are not sent (their filter chains are left out).
	Scope   string
	Refused []model.SecretRefusal
	// identity is the verified identity the group was translated for.
	identity *model.Identity
	// viewKey is the proxy view it was translated for ("" the default:
	// the push's clusters and endpoints).
	viewKey string
}

// secretsFor reports whether a proxy of identity id (nil: plaintext) may
// share g's view as far as its secrets go: g holds none, or it was built
// for an authenticated proxy of id's namespace and ServiceAccount (what a
// proxy may have depends on both). The group key already
// separates what the config says; this holds whatever a generator
// returns.
func (g *Group) secretsFor(id *model.Identity) bool {
	if g.secrets == nil || len(g.secrets.Items) == 0 {
		return true
	}
	return id != nil && g.identity != nil && g.identity.Namespace == id.Namespace && g.identity.ServiceAccount == id.ServiceAccount
}

// IsProxyless reports whether a node is a proxyless gRPC client: node id
// type "proxyless" or GENERATOR metadata "grpc". Such nodes are served the
// proxyless resources (core.Generator.BuildProxyless), by exact name,
// instead of a gateway's.
func IsProxyless(p *model.Proxy) bool {
	return p.Type == model.Proxyless || p.Generator == "grpc"
}

// envoyFilterValues is the push's EnvoyFilter patch value cache (each
// value decoded once, not per group). Under the push lock.
func (st *State) envoyFilterValues() *envoyfilter.Values {
	if st.efValues == nil {
		st.efValues = envoyfilter.NewValues()
	}
	return st.efValues
}

// Problems are the problems found translating g.
func (g *Group) Problems() []*config.Error { return g.errors }
