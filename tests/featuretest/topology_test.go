package featuretest

import (
	"context"
	"path/filepath"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// topologyGateway connects an ingress gateway that sends proxyConfig (a
// JSON ProxyConfig; "" for none) as its PROXY_CONFIG node metadata.
func topologyGateway(t *testing.T, e *env, pod, proxyConfig string) *adsc.Client {
	t.Helper()
	md := map[string]string{}
	if proxyConfig != "" {
		md["PROXY_CONFIG"] = proxyConfig
	}
	ctx, cancel := context.WithTimeout(context.Background(), serverenv.WaitTimeout)
	defer cancel()
	c, err := adsc.Dial(ctx, adsc.Config{
		Address: e.server.GRPCAddr().String(),
		Node:    adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: "istio-system", Labels: publicLabels, Metadata: md}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// topologyOf reads what listener 0.0.0.0_80 of s says about the client
// address: trusted hops, and whether the PROXY protocol filter is first.
func topologyOf(s adsc.State) (hops uint32, proxyProtocol, ok bool) {
	l := s.Listeners["0.0.0.0_80"]
	if l == nil || len(l.GetFilterChains()) == 0 {
		return 0, false, false
	}
	cm := &hcmv3.HttpConnectionManager{}
	for _, f := range l.GetFilterChains()[0].GetFilters() {
		if f.GetName() == wellknown.HTTPConnectionManager && f.GetTypedConfig().UnmarshalTo(cm) == nil {
			pp := len(l.GetListenerFilters()) > 0 && l.GetListenerFilters()[0].GetName() == wellknown.ProxyProtocol
			return cm.GetXffNumTrustedHops(), pp, true
		}
	}
	return 0, false, false
}

// The mesh config's defaultConfig.gatewayTopology applies to gateways that
// send no PROXY_CONFIG, and a change to the file reaches them; a gateway
// sending its own PROXY_CONFIG keeps it whatever the mesh config says, as
// in istiod.
func TestGatewayTopologyFromMeshConfigAndProxyConfig(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), meshRootFiles)
	meshFile := filepath.Join(t.TempDir(), "mesh")
	serverenv.WriteFile(t, meshFile, "defaultConfig:\n  gatewayTopology:\n    numTrustedProxies: 1\n")
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, MeshConfigFile: meshFile})

	plain := topologyGateway(t, e, "plain", "")
	own := topologyGateway(t, e, "own", `{"gatewayTopology": {"numTrustedProxies": 4}}`)
	waitFor(t, plain, "the mesh default topology", func(s adsc.State) bool {
		hops, pp, ok := topologyOf(s)
		return ok && allACKed(s) && hops == 1 && !pp
	})
	waitFor(t, own, "the gateway's own topology", func(s adsc.State) bool {
		hops, pp, ok := topologyOf(s)
		return ok && allACKed(s) && hops == 4 && !pp
	})

	serverenv.WriteFile(t, meshFile, "defaultConfig:\n  gatewayTopology:\n    numTrustedProxies: 2\n    proxyProtocol: {}\n")
	waitFor(t, plain, "the new mesh default topology", func(s adsc.State) bool {
		hops, pp, ok := topologyOf(s)
		return ok && allACKed(s) && hops == 2 && pp
	})
	if hops, pp, _ := topologyOf(own.State()); hops != 4 || pp {
		t.Errorf("the gateway with its own PROXY_CONFIG now has %d trusted hops, PROXY protocol %v; want its own 4, none", hops, pp)
	}
}
