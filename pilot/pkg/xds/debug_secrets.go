package xds

import (
	"fmt"
	"slices"
	"strings"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// redacted replaces key material in debug output, as Envoy's admin
// config_dump does.
const redacted = "[redacted]"

// secretsDump is the secrets section of a config dump: every secret of the
// view with its private parts replaced by "[redacted]" the way Envoy's
// admin shows them (private keys, key passwords, generic secrets, session
// ticket keys; a file name stays, it is no secret), certificates as sent.
func secretsDump(set *typeSet) (*admin.SecretsConfigDump, error) {
	sds := &admin.SecretsConfigDump{}
	for _, r := range set.items {
		sec := &tlsv3.Secret{}
		if err := r.any.UnmarshalTo(sec); err != nil {
			// The error could quote the bytes it failed on: name only.
			return nil, fmt.Errorf("secret %s does not decode", r.name)
		}
		redactSecret(sec)
		a, err := anypb.New(sec)
		if err != nil {
			return nil, fmt.Errorf("secret %s does not encode", r.name)
		}
		sds.DynamicActiveSecrets = append(sds.DynamicActiveSecrets, &admin.SecretsConfigDump_DynamicSecret{Name: r.name, VersionInfo: r.hash, Secret: a})
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

// SecretRefusalz is one gateway group's refused secrets, in
// /debug/configz: the proxies it concerns and what they are not sent.
type SecretRefusalz struct {
	Group   string                `json:"group"`
	Scope   string                `json:"scope"`
	Proxies []string              `json:"proxies"`
	Refused []model.SecretRefusal `json:"refused"`
}

// secretRefusals lists the refusals of the last push's groups that have
// proxies, by group key. The caller must not hold mu.
func (s *DiscoveryServer) secretRefusals() []SecretRefusalz {
	s.mu.Lock()
	defer s.mu.Unlock()
	byGroup := map[*group][]string{}
	for id, p := range s.proxies {
		if p.group != nil && len(p.group.refused) > 0 {
			byGroup[p.group] = append(byGroup[p.group], id)
		}
	}
	out := []SecretRefusalz{}
	for g, ids := range byGroup {
		slices.Sort(ids)
		out = append(out, SecretRefusalz{Group: g.key, Scope: g.scope, Proxies: ids, Refused: g.refused})
	}
	slices.SortFunc(out, func(a, b SecretRefusalz) int { return strings.Compare(a.Group, b.Group) })
	return out
}
