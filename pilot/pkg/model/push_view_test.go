package model

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// TestVirtualServiceExportToParity is the gateway half of istiod 1.29's
// TestVirtualServiceWithExportTo (pilot/pkg/model/push_context_test.go):
// which VirtualServices bound to Gateway default/gateway a proxy of each
// namespace gets (VirtualServicesForGateway).
func TestVirtualServiceExportToParity(t *testing.T) {
	vs := func(ns, name, host string, gateways, exportTo []string) config.Config {
		return config.Config{Meta: config.Meta{Kind: schema.VirtualService, Namespace: ns, Name: name},
			Spec: &networking.VirtualService{Hosts: []string{host}, Gateways: gateways, ExportTo: exportTo}}
	}
	store := listStore{
		vs("test1", "rule1", "rule1.com", nil, []string{".", "ns1"}),
		vs("test2", "rule2", "rule2.com", nil, []string{"test2", "ns1", "test1"}),
		vs("test2", "rule2gw", "rule2gw.com", []string{"default/gateway", "mesh"}, []string{"test2", "ns1", "test1"}),
		vs("test3", "rule3", "rule3.com", []string{"mesh"}, []string{"test1", "test2", "*"}),
		vs("test3", "rule3gw", "rule3gw.com", []string{"default/gateway"}, []string{"test1", "test2", "*"}),
		vs("zzz", "zzz", "rootNS.com", nil, nil),
	}
	ps := NewScopedPushContext(Scoping{RootNamespace: "zzz"}, store)
	for ns, want := range map[string][]string{
		"test1":  {"rule2gw.com", "rule3gw.com"},
		"test2":  {"rule2gw.com", "rule3gw.com"},
		"ns1":    {"rule2gw.com", "rule3gw.com"},
		"random": {"rule3gw.com"},
	} {
		var got []string
		for _, c := range ps.ForProxy(&Proxy{Namespace: ns}).VirtualServicesForGateway("default/gateway") {
			got = append(got, c.Spec.(*networking.VirtualService).GetHosts()...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("proxy of %s: hosts %v, want %v", ns, got, want)
		}
	}
}
