package kube

import (
	"strings"
	"testing"

	istioclient "istio.io/client-go/pkg/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// --watch-namespaces naming a namespace the RBAC forbids: the server
// still becomes ready and serves the allowed namespace, reports the
// refusal naming namespace and resource, and picks the namespace up once
// access is granted, without restarting.
func TestForbiddenNamespaceIsReportedAndAllowedOnesServed(t *testing.T) {
	c, allowed := newCluster(t, "allowed")
	forbidden := c.Namespace(t, "forbidden")
	c.AllowRestricted(t, allowed)
	e := &env{t: t, c: c, ns: allowed, kube: c.Clientset()}
	var err error
	if e.istio, err = istioclient.NewForConfig(c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	other := &env{t: t, c: c, ns: forbidden, kube: e.kube, istio: e.istio}
	e.createGateway("gw")
	e.createVS(e.virtualService("ok", "ok.example.com", "x.example.com", ""))
	other.createVS(other.virtualService("hidden", "hidden.example.com", "x.example.com", ""))
	other.createGateway("gw")

	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.RestrictedKubeconfig(), WatchNamespaces: []string{allowed, forbidden}})
	gw := e.gateway("gw-0")
	waitFor(t, gw, "the allowed namespace's config", func(s adsc.State) bool { return virtualHost(s, "ok.example.com", "") })
	if virtualHost(gw.State(), "hidden.example.com", "") {
		t.Fatal("config from the forbidden namespace is served")
	}

	errs := e.server.Store().(model.ConfigErrorReporter).ConfigErrors()
	var named []string
	for _, err := range errs {
		msg := err.Error()
		if strings.Contains(msg, `namespace "`+forbidden+`"`) && strings.Contains(msg, "cannot list/watch") {
			named = append(named, msg)
		}
	}
	for _, res := range []string{"gateways.networking.istio.io", "virtualservices.networking.istio.io", "destinationrules.networking.istio.io",
		"serviceentries.networking.istio.io", "services", "endpointslices.discovery.k8s.io", "pods"} {
		found := false
		for _, m := range named {
			found = found || strings.Contains(m, "cannot list/watch "+res+" in namespace")
		}
		if !found {
			t.Errorf("no error names %s in namespace %s; errors: %v", res, forbidden, errs)
		}
	}

	// Granting access later is picked up without a restart.
	c.AllowRestricted(t, forbidden)
	waitFor(t, gw, "the namespace once allowed", func(s adsc.State) bool { return virtualHost(s, "hidden.example.com", "") })
	for _, err := range e.server.Store().(model.ConfigErrorReporter).ConfigErrors() {
		if msg := err.Error(); strings.Contains(msg, "cannot list/watch virtualservices.networking.istio.io in namespace \""+forbidden) {
			t.Errorf("refusal still reported after access was granted and objects arrived: %s", msg)
		}
	}
}
