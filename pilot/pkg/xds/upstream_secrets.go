package xds

import (
	"slices"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// upstreamSDSNames adds the SDS secrets an upstream TLS transport socket
// (a cluster's, from a DestinationRule credentialName) fetches over ADS:
// the client certificate and the CA.
func upstreamSDSNames(ts *core.TransportSocket, out map[string]bool) {
	if ts.GetTypedConfig() == nil {
		return
	}
	tc := &tlsv3.UpstreamTlsContext{}
	if ts.GetTypedConfig().UnmarshalTo(tc) != nil {
		return
	}
	commonSDSNames(tc.GetCommonTlsContext(), out)
}

// withUpstreamSecrets interns a gateway group's upstream secrets (the
// certificates its clusters fetch) and joins them to the secrets its
// listeners fetch. Only secrets some cluster of the push names are kept:
// a secret nobody names is never requested. A listener secret of the same
// name wins.
func withUpstreamSecrets(in *interner, scope string, clusters, listenerSecrets *typeSet, upstream []*tlsv3.Secret) (*typeSet, []*config.Error) {
	if len(upstream) == 0 {
		return listenerSecrets, nil
	}
	named := map[string]bool{}
	if clusters != nil {
		for _, c := range clusters.items {
			for _, n := range c.refs[sdsIdx] {
				named[n] = true
			}
		}
	}
	keep := slices.DeleteFunc(slices.Clone(upstream), func(s *tlsv3.Secret) bool {
		return !named[s.GetName()] || (listenerSecrets != nil && listenerSecrets.byName[s.GetName()] != nil)
	})
	rs, errs := prepare(in, sdsIdx, scope+"/upstream", keep)
	var items []*res
	if listenerSecrets != nil {
		items = slices.Clone(listenerSecrets.items)
	}
	items = append(items, rs...)
	slices.SortFunc(items, func(a, b *res) int { return strings.Compare(a.name, b.name) })
	return newTypeSet(items), errs
}
