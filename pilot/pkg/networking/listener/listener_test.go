package listener

import (
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func gateway(name string, servers ...*networking.Server) config.Config {
	c := objects.GatewayServers("istio-system", name, servers...)
	c.Source = name + ".yaml"
	return c
}

func server(port uint32, protocol string) *networking.Server {
	return &networking.Server{Port: &networking.Port{Number: port, Protocol: protocol, Name: "p"}, Hosts: []string{"*"}}
}

func TestBuildGatewayListeners(t *testing.T) {
	mg := model.MergeGateways([]config.Config{
		gateway("a", server(8080, "HTTP2"), server(80, "HTTP")),
		gateway("b", server(80, "HTTP"), server(9090, "GRPC"), server(443, "HTTPS")),
	})
	ls, errs := BuildGatewayListeners(nil, mg)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []struct {
		name  string
		port  uint32
		route string
	}{{"0.0.0.0_80", 80, "http.80"}, {"0.0.0.0_8080", 8080, "http.8080"}, {"0.0.0.0_9090", 9090, "http.9090"}}
	if len(ls) != len(want) {
		t.Fatalf("%d listeners, want %d (one per HTTP port, HTTPS skipped)", len(ls), len(want))
	}
	for i, w := range want {
		l := ls[i]
		if err := l.ValidateAll(); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
		sa := l.GetAddress().GetSocketAddress()
		if l.Name != w.name || sa.GetAddress() != "0.0.0.0" || sa.GetPortValue() != w.port {
			t.Errorf("listener %d: %s at %s:%d, want %s on port %d", i, l.Name, sa.GetAddress(), sa.GetPortValue(), w.name, w.port)
		}
		if l.GetTrafficDirection().String() != "OUTBOUND" {
			t.Errorf("%s: direction %v", l.Name, l.GetTrafficDirection())
		}
		if len(l.GetFilterChains()) != 1 || len(l.GetFilterChains()[0].GetFilters()) != 1 {
			t.Fatalf("%s: want one chain with one filter: %v", l.Name, l.GetFilterChains())
		}
		f := l.GetFilterChains()[0].GetFilters()[0]
		if f.GetName() != "envoy.filters.network.http_connection_manager" {
			t.Errorf("%s: filter %s", l.Name, f.GetName())
		}
		hcm := &hcmv3.HttpConnectionManager{}
		if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
			t.Fatal(err)
		}
		checkHCM(t, hcm, w.name, w.route)
	}
}

func checkHCM(t *testing.T, hcm *hcmv3.HttpConnectionManager, listener, route string) {
	t.Helper()
	if hcm.GetStatPrefix() != "outbound_"+listener {
		t.Errorf("stat prefix %q", hcm.GetStatPrefix())
	}
	if hcm.GetCodecType() != hcmv3.HttpConnectionManager_AUTO {
		t.Errorf("codec %v", hcm.GetCodecType())
	}
	rds := hcm.GetRds()
	if rds.GetRouteConfigName() != route || rds.GetConfigSource().GetAds() == nil ||
		rds.GetConfigSource().GetResourceApiVersion().String() != "V3" || rds.GetConfigSource().GetInitialFetchTimeout().AsDuration() != 0 {
		t.Errorf("rds %v", rds)
	}
	var names []string
	for _, f := range hcm.GetHttpFilters() {
		names = append(names, f.GetName())
		if f.GetTypedConfig() == nil {
			t.Errorf("filter %s has no typed config", f.GetName())
		}
	}
	if len(names) != 3 || names[0] != "envoy.filters.http.fault" || names[1] != "envoy.filters.http.cors" || names[2] != "envoy.filters.http.router" {
		t.Errorf("http filters %v, want fault, cors, router", names)
	}
	if !hcm.GetUseRemoteAddress().GetValue() {
		t.Error("use_remote_address must be true at the edge")
	}
	if !hcm.GetNormalizePath().GetValue() || hcm.GetMergeSlashes() ||
		hcm.GetPathWithEscapedSlashesAction() != hcmv3.HttpConnectionManager_KEEP_UNCHANGED {
		t.Errorf("path normalisation: normalize %v merge %v escaped %v", hcm.GetNormalizePath(), hcm.GetMergeSlashes(), hcm.GetPathWithEscapedSlashesAction())
	}
	if hcm.GetStreamIdleTimeout() == nil || hcm.GetStreamIdleTimeout().AsDuration() != 0 {
		t.Errorf("stream idle timeout %v, want explicitly disabled (0s)", hcm.GetStreamIdleTimeout())
	}
	if u := hcm.GetUpgradeConfigs(); len(u) != 1 || u[0].GetUpgradeType() != "websocket" {
		t.Errorf("upgrades %v", u)
	}
	if hcm.GetForwardClientCertDetails() != hcmv3.HttpConnectionManager_SANITIZE_SET {
		t.Errorf("xfcc %v", hcm.GetForwardClientCertDetails())
	}
}

func TestNoServersNoListeners(t *testing.T) {
	ls, errs := BuildGatewayListeners(nil, model.MergeGateways(nil))
	if len(ls) != 0 || len(errs) != 0 {
		t.Errorf("got %d listeners, %d errors; want none", len(ls), len(errs))
	}
	ls, _ = BuildGatewayListeners(nil, model.MergeGateways([]config.Config{gateway("tcp", server(31400, "TCP"))}))
	if len(ls) != 0 {
		t.Errorf("TCP-only gateway produced %d listeners", len(ls))
	}
}

func TestInvalidListenerIsReportedPerServer(t *testing.T) {
	// Port 70000 cannot come from a valid Gateway, but a listener Envoy
	// would reject must be reported against each server on it, not built.
	mg := model.MergeGateways([]config.Config{gateway("a", server(80, "HTTP"), server(70000, "HTTP")), gateway("b", server(70000, "HTTP"))})
	ls, errs := BuildGatewayListeners(nil, mg)
	if len(ls) != 1 || ls[0].Name != "0.0.0.0_80" {
		t.Errorf("listeners %v, want only 0.0.0.0_80", ls)
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one per server on port 70000", errs)
	}
	if errs[0].Key.Name != "a" || errs[0].Field != "spec.servers[1]" || errs[0].Source != "a.yaml" || errs[1].Key.Name != "b" || errs[1].Field != "spec.servers[0]" {
		t.Errorf("errors %v", errs)
	}
}
