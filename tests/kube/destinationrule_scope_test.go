package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// A tenant's DestinationRule for another namespace's Service, against the
// real API server: namespace evil asks for PASSTHROUGH load balancing
// (ORIGINAL_DST) and a connection pool of 1 for bank's ledger, older than
// any rule of bank's. The gateway (namespace istio-system, the root) keeps
// ledger's cluster as bank's own rule says, the rule is reported on its
// status, and only a proxy of namespace evil gets it, as istiod 1.29
// (PushContext.destinationRule: the proxy's namespace, the service's, the
// root namespace).
func TestForeignDestinationRuleLeavesTheGatewayClusterAlone(t *testing.T) {
	c := cluster.Get(t)
	bank, evil := c.Namespace(t, "bank"), c.Namespace(t, "evil")
	e := clientEnv(t, c, bank)
	var err error
	// PodName and PodNamespace make the server write status.
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{bank, evil},
		PodName: "wayfinder-0", PodNamespace: bank})
	ledger := e.host("ledger")
	name := model.ClusterName(9080, "", ledger)

	_, err = e.istio.NetworkingV1().DestinationRules(evil).Create(ctx, &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: evil, Name: "steal"},
		Spec: networking.DestinationRule{Host: ledger, TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer:   &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_PASSTHROUGH}},
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 1}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	e.createService("ledger")
	gw := e.gateway("gw-0")

	// The server has evil's rule once it reports it: only then does an
	// unaffected cluster prove anything.
	waitForRuleStatus(t, e.istio, evil, "steal", "only for proxies of its own namespace ("+evil+")")
	s := waitFor(t, gw, "ledger's cluster", func(s adsc.State) bool { return s.Clusters[name] != nil })
	if c := s.Clusters[name]; c.GetType() != clusterv3.Cluster_EDS || maxConnections(c) == 1 {
		t.Fatalf("evil's rule changed bank's cluster for the istio-system gateway: type %v, maxConnections %d", c.GetType(), maxConnections(c))
	}

	// The service namespace's own rule applies.
	_, err = e.istio.NetworkingV1().DestinationRules(bank).Create(ctx, &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: bank, Name: "ledger"},
		Spec: networking.DestinationRule{Host: ledger, TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 77}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	waitFor(t, gw, "bank's own rule on ledger's cluster", func(s adsc.State) bool {
		c := s.Clusters[name]
		return c.GetType() == clusterv3.Cluster_EDS && maxConnections(c) == 77
	})

	// A proxy of namespace evil does get evil's rule: its own namespace's
	// rules come first. It is served its own clusters; the istio-system
	// gateway keeps bank's.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	evilGW, err := adsc.Dial(ctx, adsc.Config{Address: e.server.GRPCAddr().String(),
		Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.2", PodName: "gw-evil", Namespace: evil, Labels: map[string]string{"istio": "ingressgateway"}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { evilGW.Close() })
	waitFor(t, evilGW, "evil's rule for evil's own proxy", func(s adsc.State) bool {
		c := s.Clusters[name]
		return c.GetType() == clusterv3.Cluster_ORIGINAL_DST && maxConnections(c) == 1
	})
	if c := gw.State().Clusters[name]; c.GetType() != clusterv3.Cluster_EDS || maxConnections(c) != 77 {
		t.Errorf("after evil's proxy connected, the istio-system gateway's cluster is type %v, maxConnections %d", c.GetType(), maxConnections(c))
	}
}

// maxConnections is the cluster's default-priority connection limit; 0
// when it has none.
func maxConnections(c *clusterv3.Cluster) uint32 {
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		return th.GetMaxConnections().GetValue()
	}
	return 0
}

// waitForRuleStatus waits until DestinationRule ns/name's Valid condition
// carries text.
func waitForRuleStatus(t *testing.T, istio istioclient.Interface, ns, name, text string) {
	t.Helper()
	poll.Seen(t, fmt.Sprintf("DestinationRule %s/%s: Valid saying %q", ns, name, text), func() (string, bool) {
		dr, err := istio.NetworkingV1().DestinationRules(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var last string
		for _, c := range dr.Status.GetConditions() {
			if c.GetType() == status.ConditionValid {
				last = c.GetMessage()
				if strings.Contains(last, text) {
					return last, true
				}
			}
		}
		return last, false
	}, apiPoll...)
}
