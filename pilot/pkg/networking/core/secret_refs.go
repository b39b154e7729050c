package core

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// keepReferenced returns the secrets some listener's filter chain names
// over SDS, in their order. A server's certificate is loaded before its
// listener is built, and the listener may still leave the server out (a
// TLS server without a TCP route, a port taken by another protocol): its
// key must then not be sent, as no listener would ever ask for it.
func keepReferenced(secrets []*tlsv3.Secret, listeners []*listenerv3.Listener) []*tlsv3.Secret {
	if len(secrets) == 0 {
		return secrets
	}
	named := map[string]bool{}
	for _, l := range listeners {
		for _, fc := range l.GetFilterChains() {
			ts := fc.GetTransportSocket()
			if ts == nil {
				continue
			}
			ctx := &tlsv3.DownstreamTlsContext{}
			if ts.GetTypedConfig().UnmarshalTo(ctx) != nil {
				continue
			}
			common := ctx.GetCommonTlsContext()
			for _, sds := range common.GetTlsCertificateSdsSecretConfigs() {
				named[sds.GetName()] = true
			}
			if ca := common.GetCombinedValidationContext().GetValidationContextSdsSecretConfig(); ca != nil {
				named[ca.GetName()] = true
			}
			if ca := common.GetValidationContextSdsSecretConfig(); ca != nil {
				named[ca.GetName()] = true
			}
		}
	}
	out := make([]*tlsv3.Secret, 0, len(secrets))
	for _, s := range secrets {
		if named[s.GetName()] {
			out = append(out, s)
		}
	}
	return out
}
