package analysis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
)

var cluster apiserver.Shared

func TestMain(m *testing.M) {
	code := cluster.Run(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// analyze --kubeconfig: the cluster's objects are read with the server's
// informers, validated and translated; findings name the object, and a
// Kubernetes Service counts as a destination.
func TestLoadCluster(t *testing.T) {
	c := cluster.Get(t)
	ns := c.Namespace(t, "analyze")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	docs := []string{`
apiVersion: v1
kind: Service
metadata: {name: shop, namespace: NS}
spec:
  ports: [{name: http, port: 80}]`, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: NS}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}`, `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: NS}
spec:
  hosts: [shop.example.com]
  gateways: [public, elsewhere]
  http:
  - route: [{destination: {host: shop, port: {number: 80}}}]`, `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: regex, namespace: NS}
spec:
  hosts: [regex.example.com]
  gateways: [public]
  http:
  - match: [{uri: {regex: "(unclosed"}}]
    route: [{destination: {host: shop, port: {number: 80}}}]`}
	var raw [][]byte
	for _, d := range docs {
		raw = append(raw, []byte(strings.ReplaceAll(d, "NS", ns)))
	}
	if _, err := c.Apply(ctx, apiserver.ApplyOptions{}, raw...); err != nil {
		t.Fatal(err)
	}
	configs, errs, reg, err := analysis.LoadCluster(ctx, analysis.ClusterOptions{RESTConfig: c.RESTConfig(), Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	fs := analysis.Findings(analysis.Analyze(configs, errs, analysis.Options{Registries: []model.ServiceDiscovery{reg}}), nil)
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s %s %s/%s %s: %s [%s]", f.Severity, f.Kind, f.Namespace, f.Name, f.Field, f.Message, f.Source))
	}
	want := []struct{ name, field, contains string }{
		{"regex", "spec.http[0].match[0].uri.regex", "invalid RE2 regex"},
		{"shop", "spec.gateways[1]", "Gateway " + ns + "/elsewhere does not exist"},
	}
	for _, w := range want {
		found := false
		for _, f := range fs {
			if f.Name == w.name && f.Field == w.field && strings.Contains(f.Message, w.contains) && strings.HasPrefix(f.Source, "kube://") && f.File == "" {
				found = true
			}
		}
		if !found {
			t.Errorf("no finding on %s %s containing %q in\n%s", w.name, w.field, w.contains, strings.Join(got, "\n"))
		}
	}
	// The Service resolves the destination: no "no service" warning.
	for _, g := range got {
		if strings.Contains(g, "no service is defined") {
			t.Errorf("the Kubernetes Service was not used: %s", g)
		}
	}
	if len(fs) != 2 {
		t.Errorf("%d findings, want 2:\n%s", len(fs), strings.Join(got, "\n"))
	}
}
