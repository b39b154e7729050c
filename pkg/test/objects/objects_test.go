package objects

import (
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func TestPublicGatewayYAMLParses(t *testing.T) {
	cfgs, errs := manifest.Parse("public.yaml", []byte(PublicGatewayYAML), manifest.Options{})
	if len(errs) > 0 || len(cfgs) != 1 {
		t.Fatalf("parsed %d objects, errors %v", len(cfgs), errs)
	}
	gw := cfgs[0].Spec.(*networking.Gateway)
	if cfgs[0].Kind != schema.Gateway || cfgs[0].Namespace != "istio-system" || cfgs[0].Name != "public" ||
		gw.GetSelector()["istio"] != "ingressgateway" || gw.GetServers()[0].GetPort().GetNumber() != 80 {
		t.Errorf("parsed %+v %v", cfgs[0].Meta, gw)
	}
}

func TestBuildersFillWhatTheyName(t *testing.T) {
	dr := DestinationRule("ns", "dr", "h.example.com", "v1", "v2")
	if s := dr.Spec.(*networking.DestinationRule); dr.Kind != schema.DestinationRule || s.Host != "h.example.com" ||
		len(s.Subsets) != 2 || s.Subsets[1].Name != "v2" {
		t.Errorf("DestinationRule = %+v %v", dr.Meta, dr.Spec)
	}
	se := ServiceEntry("ns", "se", "h.example.com", 8080, "10.0.0.1", "10.0.0.2")
	if s := se.Spec.(*networking.ServiceEntry); s.Resolution != networking.ServiceEntry_STATIC ||
		s.Ports[0].GetNumber() != 8080 || len(s.Endpoints) != 2 {
		t.Errorf("ServiceEntry = %v", se.Spec)
	}
	if gw := Gateway("ns", "gw", "a", "b"); len(gw.Spec.(*networking.Gateway).Servers[0].Hosts) != 2 {
		t.Errorf("Gateway = %v", gw.Spec)
	}
	es := EndpointSlice("ns", "svc", "svc-1", []discoveryv1.EndpointPort{TCPPort("http", 8080)})
	if es.Labels[discoveryv1.LabelServiceName] != "svc" || *es.Ports[0].Port != 8080 {
		t.Errorf("EndpointSlice = %+v", es)
	}
}

func TestValidateByLabelRejectsOnlyTheMarked(t *testing.T) {
	c := VirtualService("ns", "vs", "a.example.com")
	if err := ValidateByLabel(c); err != nil {
		t.Errorf("unmarked: %v", err)
	}
	c.Labels = map[string]string{InvalidLabel: "spec.hosts"}
	if err := ValidateByLabel(c); err == nil || !strings.Contains(err.Error(), "spec.hosts") {
		t.Errorf("marked: %v, want an error naming spec.hosts", err)
	}
}
