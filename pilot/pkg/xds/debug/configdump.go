package debug

import (
	"fmt"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

// ConfigDump renders a view as Envoy's ConfigDump: clusters, endpoints,
// listeners and routes, each sorted by name, all dynamic (from xDS), from
// the resources' shared encodings. Secrets, when the view has any, are
// shown as Envoy's admin shows them: private keys "[redacted]".
func ConfigDump(v *snapshot.View) (*admin.ConfigDump, error) {
	cds := &admin.ClustersConfigDump{VersionInfo: v.Sets[snapshot.CDS].Version}
	for _, r := range v.Sets[snapshot.CDS].Items {
		cds.DynamicActiveClusters = append(cds.DynamicActiveClusters, &admin.ClustersConfigDump_DynamicCluster{VersionInfo: cds.VersionInfo, Cluster: r.Any})
	}
	eds := &admin.EndpointsConfigDump{}
	for _, r := range v.Sets[snapshot.EDS].Items {
		eds.DynamicEndpointConfigs = append(eds.DynamicEndpointConfigs, &admin.EndpointsConfigDump_DynamicEndpointConfig{VersionInfo: v.Sets[snapshot.EDS].Version, EndpointConfig: r.Any})
	}
	lds := &admin.ListenersConfigDump{VersionInfo: v.Sets[snapshot.LDS].Version}
	for _, r := range v.Sets[snapshot.LDS].Items {
		lds.DynamicListeners = append(lds.DynamicListeners, &admin.ListenersConfigDump_DynamicListener{
			Name: r.Name, ActiveState: &admin.ListenersConfigDump_DynamicListenerState{VersionInfo: lds.VersionInfo, Listener: r.Any},
		})
	}
	rds := &admin.RoutesConfigDump{}
	for _, r := range v.Sets[snapshot.RDS].Items {
		rds.DynamicRouteConfigs = append(rds.DynamicRouteConfigs, &admin.RoutesConfigDump_DynamicRouteConfig{VersionInfo: v.Sets[snapshot.RDS].Version, RouteConfig: r.Any})
	}
	sections := []proto.Message{cds, eds, lds, rds}
	if secrets := v.Sets[snapshot.SDS]; len(secrets.Items) > 0 {
		sds, err := secretsDump(secrets)
		if err != nil {
			return nil, err
		}
		sections = append(sections, sds)
	}
	dump := &admin.ConfigDump{}
	for _, m := range sections {
		a, err := anypb.New(m)
		if err != nil {
			return nil, err
		}
		dump.Configs = append(dump.Configs, a)
	}
	return dump, nil
}

// redacted replaces key material in debug output, as Envoy's admin
// config_dump does.
const redacted = "[redacted]"

// secretsDump is the secrets section of a config dump: every secret of the
// view with its private parts replaced by "[redacted]" the way Envoy's
// admin shows them (private keys, key passwords, generic secrets, session
// ticket keys; a file name stays, it is no secret), certificates as sent.
func secretsDump(set *snapshot.TypeSet) (*admin.SecretsConfigDump, error) {
	sds := &admin.SecretsConfigDump{}
	for _, r := range set.Items {
		sec := &tlsv3.Secret{}
		if err := r.Any.UnmarshalTo(sec); err != nil {
			// The error could quote the bytes it failed on: name only.
			return nil, fmt.Errorf("secret %s does not decode", r.Name)
		}
		redactSecret(sec)
		a, err := anypb.New(sec)
		if err != nil {
			return nil, fmt.Errorf("secret %s does not encode", r.Name)
		}
		sds.DynamicActiveSecrets = append(sds.DynamicActiveSecrets, &admin.SecretsConfigDump_DynamicSecret{Name: r.Name, VersionInfo: r.Hash, Secret: a})
	}
	return sds, nil
}

// redactSecret replaces sec's private parts in place.
func redactSecret(sec *tlsv3.Secret) {
	if c := sec.GetTlsCertificate(); c != nil {
		c.PrivateKey = redactSource(c.PrivateKey)
		c.Password = redactSource(c.Password)
		if p := c.GetPrivateKeyProvider(); p != nil {
			// Its typed config holds the key for the provider.
			p.ConfigType = nil
		}
	}
	if g := sec.GetGenericSecret(); g != nil {
		g.Secret = redactSource(g.Secret)
	}
	if k := sec.GetSessionTicketKeys(); k != nil {
		for i := range k.Keys {
			k.Keys[i] = redactSource(k.Keys[i])
		}
	}
}

func redactSource(d *corev3.DataSource) *corev3.DataSource {
	if d == nil || d.GetFilename() != "" {
		return d
	}
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: redacted}}
}
