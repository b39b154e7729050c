package listener

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/nettest"
)

// selectChain picks the filter chain Envoy would for a connection with
// this SNI: an exact server name first, then the longest wildcard suffix
// ("*.b.example.com" before "*.example.com"), then a chain without server
// names; nil when none matches (Envoy closes the connection).
func selectChain(l *listenerv3.Listener, sni string) *listenerv3.FilterChain {
	sni = strings.ToLower(sni)
	var catchAll *listenerv3.FilterChain
	byName := map[string]*listenerv3.FilterChain{}
	for _, fc := range l.GetFilterChains() {
		names := fc.GetFilterChainMatch().GetServerNames()
		if len(names) == 0 {
			catchAll = fc
		}
		for _, n := range names {
			byName[n] = fc
		}
	}
	if fc := byName[sni]; fc != nil {
		return fc
	}
	for rest := sni; ; {
		_, after, ok := strings.Cut(rest, ".")
		if !ok {
			break
		}
		if fc := byName["*."+after]; fc != nil {
			return fc
		}
		rest = after
	}
	return catchAll
}

// chainClusters are the clusters a chain's TCP proxy forwards to.
func chainClusters(t *testing.T, fc *listenerv3.FilterChain) []string {
	t.Helper()
	if fc == nil {
		return nil
	}
	tp := &tcpv3.TcpProxy{}
	if err := fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatalf("chain filter is not a TCP proxy: %v", err)
	}
	if c := tp.GetCluster(); c != "" {
		return []string{c}
	}
	var out []string
	for _, w := range tp.GetWeightedClusters().GetClusters() {
		out = append(out, w.GetName())
	}
	return out
}

// clientHelloSNI opens a real TLS connection to a loopback listener and
// returns the server name the listener read from the ClientHello, as
// Envoy's TLS inspector reads it.
func clientHelloSNI(t *testing.T, serverName string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- ""
			return
		}
		defer c.Close()
		srv := tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			got <- h.ServerName
			return nil, errors.New("inspected only")
		}})
		_ = srv.Handshake()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{ServerName: serverName, InsecureSkipVerify: true}} //nolint:gosec // nothing is verified: only the hello is read
	if c, err := d.DialContext(ctx, "tcp", ln.Addr().String()); err == nil {
		c.Close()
	}
	select {
	case sni := <-got:
		return sni
	case <-ctx.Done():
		t.Fatal("no ClientHello read")
		return ""
	}
}

// The passthrough listener's chains route each SNI a client sends to the
// route written for it: exact names, wildcards, and nothing for a host
// without a route. Each SNI comes from a real ClientHello on 127.0.0.1.
func TestPassthroughSNISelectsChain(t *testing.T) {
	push := nettest.PushFromYAML(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec:
  servers:
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: ["*.example.com", "other.org"]
    tls: {mode: PASSTHROUGH}
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [web.example.com]
    tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs, namespace: default}
spec:
  hosts: ["*.example.com"]
  gateways: [istio-system/gw]
  tls:
  - match: [{sniHosts: [db.example.com]}]
    route: [{destination: {host: db.default.svc.cluster.local, port: {number: 5432}}}]
  - match: [{sniHosts: ["*.apps.example.com"]}]
    route:
    - {destination: {host: apps.default.svc.cluster.local, port: {number: 8443}}, weight: 50}
    - {destination: {host: apps2.default.svc.cluster.local, port: {number: 8443}}, weight: 50}
  - match: [{sniHosts: ["*.example.com"]}]
    route: [{destination: {host: rest.default.svc.cluster.local, port: {number: 443}}}]
`)
	mg := model.MergeGateways(push.Gateways())
	ls, errs := BuildGatewayListeners(push, mg)
	if len(ls) != 1 {
		t.Fatalf("listeners %v errors %v", ls, errs)
	}
	l := ls[0]
	if err := l.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	if len(l.GetListenerFilters()) != 1 || l.GetListenerFilters()[0].GetName() != "envoy.filters.listener.tls_inspector" {
		t.Errorf("listener filters %v", l.GetListenerFilters())
	}
	cases := []struct {
		sni  string
		want []string // nil: the HTTPS chain or no chain, see below
	}{
		{"db.example.com", []string{"outbound|5432||db.default.svc.cluster.local"}},
		{"DB.Example.com", []string{"outbound|5432||db.default.svc.cluster.local"}},
		{"x.apps.example.com", []string{"outbound|8443||apps.default.svc.cluster.local", "outbound|8443||apps2.default.svc.cluster.local"}},
		{"a.b.apps.example.com", []string{"outbound|8443||apps.default.svc.cluster.local", "outbound|8443||apps2.default.svc.cluster.local"}},
		{"shop.example.com", []string{"outbound|443||rest.default.svc.cluster.local"}},
		{"other.org", nil},
		{"unknown.net", nil},
	}
	for _, tc := range cases {
		sni := clientHelloSNI(t, tc.sni)
		fc := selectChain(l, sni)
		if tc.want == nil {
			if fc != nil {
				t.Errorf("SNI %s (read %q): a chain matched, want none: %v", tc.sni, sni, fc.GetFilterChainMatch())
			}
			continue
		}
		if got := chainClusters(t, fc); !slices.Equal(got, tc.want) {
			t.Errorf("SNI %s (read %q): clusters %v, want %v", tc.sni, sni, got, tc.want)
		}
	}
	// The HTTPS server's own name goes to its terminating chain.
	if fc := selectChain(l, clientHelloSNI(t, "web.example.com")); fc.GetTransportSocket() == nil {
		t.Errorf("web.example.com should reach the HTTPS chain, got %v", fc)
	}
	// other.org has no tls route: reported, not served.
	var reported bool
	for _, e := range errs {
		if e.Warning && strings.Contains(e.Message, "host other.org of this PASSTHROUGH server has no tls route") {
			reported = true
		}
	}
	if !reported {
		t.Errorf("errors %v", errs)
	}
}
