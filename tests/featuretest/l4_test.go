package featuretest

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

var edgeLabels = map[string]string{"istio": "edge"}

const edgeGatewayYAML = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: istio-system}
spec:
  selector: {istio: edge}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [web.example.com]
    tls: {httpsRedirect: true}
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [web.example.com]
    tls: {mode: MUTUAL, serverCertificate: /etc/certs/tls.crt, privateKey: /etc/certs/tls.key, caCertificates: /etc/certs/ca.crt}
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [db.example.com]
    tls: {mode: PASSTHROUGH}
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: ["*"]
  - port: {number: 80, name: tcp-conflict, protocol: TCP}
    hosts: ["*"]
`

func edgeRoutesYAML(passthroughDst string) string {
	return `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: edge, namespace: default}
spec:
  hosts: [web.example.com, db.example.com]
  gateways: [istio-system/edge]
  http:
  - route: [{destination: {host: reviews.default.svc.cluster.local, port: {number: 9080}}}]
  tls:
  - match: [{sniHosts: [db.example.com]}]
    route: [{destination: {host: ` + passthroughDst + `, port: {number: 9080}}}]
  tcp:
  - match: [{port: 31400}]
    route:
    - {destination: {host: reviews.default.svc.cluster.local, subset: v1}, weight: 75}
    - {destination: {host: reviews.default.svc.cluster.local, subset: v2}, weight: 25}
`
}

func edgeFiles() map[string]string {
	files := baseFiles()
	files["edge.yaml"] = edgeGatewayYAML
	files["edge-routes.yaml"] = edgeRoutesYAML("reviews.default.svc.cluster.local")
	return files
}

// chainFor returns the filter chain of listener l matching server name sni
// exactly (nil: the chain without server names).
func chainFor(l *listenerv3.Listener, sni string) *listenerv3.FilterChain {
	for _, fc := range l.GetFilterChains() {
		names := fc.GetFilterChainMatch().GetServerNames()
		if (sni == "" && len(names) == 0) || slices.Contains(names, sni) {
			return fc
		}
	}
	return nil
}

func tcpProxyOf(t *testing.T, fc *listenerv3.FilterChain) *tcpv3.TcpProxy {
	t.Helper()
	tp := &tcpv3.TcpProxy{}
	if fc == nil || len(fc.GetFilters()) != 1 || fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(tp) != nil {
		t.Fatalf("chain is not one TCP proxy: %v", fc)
	}
	return tp
}

// Through the real ADS server, a gateway gets TLS passthrough by SNI,
// mutual TLS, a TCP port with a weighted split and an HTTPS redirect, all
// accepted by the Envoy-like client; the conflicting TCP server on the
// HTTP port is reported in configz and everything else is served. A
// change of the tls route's destination reaches the gateway's listener.
func TestGatewayTLSAndTCP(t *testing.T) {
	e := newEnv(t, edgeFiles())
	c := e.gateway("edge-1", edgeLabels, nil)
	s := waitFor(t, c, "edge listeners", func(s adsc.State) bool {
		return allACKed(s) && s.Listeners["0.0.0.0_443"] != nil && s.Listeners["0.0.0.0_31400"] != nil && s.Routes["http.80"] != nil
	})
	if got := s.Names(adsc.ListenerType); !slices.Equal(got, []string{"0.0.0.0_31400", "0.0.0.0_443", "0.0.0.0_80"}) {
		t.Errorf("listeners %v", got)
	}

	tls443 := s.Listeners["0.0.0.0_443"]
	if tp := tcpProxyOf(t, chainFor(tls443, "db.example.com")); tp.GetCluster() != reviews || tp.GetStatPrefix() != reviews {
		t.Errorf("passthrough chain proxies to %q (stat prefix %q), want %s", tp.GetCluster(), tp.GetStatPrefix(), reviews)
	}
	web := chainFor(tls443, "web.example.com")
	ctx := &tlsv3.DownstreamTlsContext{}
	if web == nil || web.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx) != nil {
		t.Fatalf("no terminating chain for web.example.com: %v", web)
	}
	if !ctx.GetRequireClientCertificate().GetValue() || ctx.GetCommonTlsContext().GetValidationContext().GetTrustedCa().GetFilename() != "/etc/certs/ca.crt" {
		t.Errorf("MUTUAL server: require %v, validation %v", ctx.GetRequireClientCertificate(), ctx.GetCommonTlsContext().GetValidationContext())
	}

	tp := tcpProxyOf(t, chainFor(s.Listeners["0.0.0.0_31400"], ""))
	var split []string
	for _, w := range tp.GetWeightedClusters().GetClusters() {
		split = append(split, w.GetName()+"="+strconv.FormatUint(uint64(w.GetWeight()), 10))
	}
	if !slices.Equal(split, []string{reviewsV1 + "=75", reviewsV2 + "=25"}) || tp.GetStatPrefix() != "edge.default" {
		t.Errorf("TCP split %v, stat prefix %q", split, tp.GetStatPrefix())
	}

	var redirect *routev3.VirtualHost
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() == "web.example.com:80" {
			redirect = vh
		}
	}
	if redirect.GetRequireTls() != routev3.VirtualHost_ALL {
		t.Errorf("httpsRedirect: virtual host %v, want require_tls ALL (a 301 to https)", redirect)
	}

	if !slices.ContainsFunc(e.configz().Errors, func(ce debugapi.ConfigzError) bool {
		return ce.Name == "edge" && ce.Field == "spec.servers[4].port.protocol" && strings.Contains(ce.Message, "port 80 already serves plain HTTP") && !ce.Warning
	}) {
		t.Errorf("conflict not reported: %+v", e.configz().Errors)
	}

	e.write("edge-routes.yaml", edgeRoutesYAML("ratings.default.svc.cluster.local"))
	s = waitFor(t, c, "new passthrough destination", func(s adsc.State) bool {
		l := s.Listeners["0.0.0.0_443"]
		fc := chainFor(l, "db.example.com")
		tp := &tcpv3.TcpProxy{}
		return fc != nil && fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(tp) == nil && tp.GetCluster() == "outbound|9080||ratings.default.svc.cluster.local"
	})
	if !allACKed(s) {
		t.Errorf("updated listener not ACKed: %s", describe(s))
	}
}
