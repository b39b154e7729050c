package gatewayapi_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

// backendTLSClusters renders the clusters of push that originate TLS,
// each validated as the server validates what it sends (ValidateAll,
// which also checks the packed UpstreamTlsContext).
func backendTLSClusters(t *testing.T, push *model.PushContext) []byte {
	t.Helper()
	clusters, errs := cluster.BuildClusters(push)
	var tlsClusters []*clusterv3.Cluster
	for _, c := range clusters {
		if err := c.ValidateAll(); err != nil {
			t.Errorf("cluster %s fails validation: %v", c.Name, err)
		}
		if ts := c.GetTransportSocket(); ts != nil {
			ctx := &tlsv3.UpstreamTlsContext{}
			if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
				t.Errorf("cluster %s: %v", c.Name, err)
			} else if err := ctx.ValidateAll(); err != nil {
				t.Errorf("cluster %s TLS context fails validation: %v", c.Name, err)
			}
			tlsClusters = append(tlsClusters, c)
		}
	}
	var b bytes.Buffer
	golden.Section(t, &b, "tls clusters", tlsClusters)
	msgs := []string{}
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	golden.WriteYAML(t, &b, "cluster errors", msgs)
	return b.Bytes()
}

func backendTLSInput(t *testing.T) input {
	t.Helper()
	data, err := os.ReadFile("testdata/backendtls.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, data)
}

// The CA's content never appears in an error or a status message, only
// the object and key it came from.
func TestBackendTLSNoCAMaterialInMessages(t *testing.T) {
	in := backendTLSInput(t)
	res := gatewayapi.ConvertWithStatus(in.kube, gatewayapi.Options{}, goldenNow)
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Error())
	}
	for _, st := range res.Status.BackendTLSPolicies {
		for _, a := range st.Ancestors {
			for _, c := range a.Conditions {
				msgs = append(msgs, c.Message)
			}
		}
	}
	for _, m := range msgs {
		if strings.Contains(m, "BEGIN CERTIFICATE") || strings.Contains(m, "MII") || strings.Contains(m, "not a certificate") {
			t.Errorf("message carries CA material: %s", m)
		}
	}
}

// Of two policies on one Service, the older takes precedence whatever the
// input order; on a tie, the first by namespace/name.
func TestBackendTLSConflictOldestWins(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	pol := func(name, host string, created time.Time) *gw.BackendTLSPolicy {
		sys := gw.WellKnownCACertificatesSystem
		return &gw.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec: gw.BackendTLSPolicySpec{
				TargetRefs: []gw.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gw.LocalPolicyTargetReference{Kind: "Service", Name: "svc"}}},
				Validation: gw.BackendTLSPolicyValidation{WellKnownCACertificates: &sys, Hostname: gw.PreciseHostname(host)}}}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older, newer := pol("z-older", "older.example.com", t0), pol("a-newer", "newer.example.com", t0.Add(time.Second))
	for _, order := range [][]*gw.BackendTLSPolicy{{older, newer}, {newer, older}} {
		in := gatewayapi.Input{BackendTLSPolicies: order, Services: func(ns, name string) *corev1.Service {
			if ns == "ns" && name == "svc" {
				return svc
			}
			return nil
		}}
		cfgs, _ := gatewayapi.Convert(in, gatewayapi.Options{})
		if len(cfgs) != 1 || cfgs[0].Kind != schema.DestinationRule {
			t.Fatalf("want one DestinationRule, got %v", cfgs)
		}
		dr := cfgs[0].Spec.(*networking.DestinationRule)
		if got := dr.GetTrafficPolicy().GetTls().GetSni(); got != "older.example.com" {
			t.Errorf("sni %q: the older policy must take precedence", got)
		}
		if dr.GetHost() != "svc.ns.svc.cluster.local" || cfgs[0].Namespace != "ns" || len(dr.GetExportTo()) != 0 || dr.GetWorkloadSelector() != nil {
			t.Errorf("the rule must bind the targeted Service's host alone: %v in %s", dr, cfgs[0].Namespace)
		}
	}
}

// A generated rule takes the traffic policy of its host from a user's rule
// of the same namespace (it is the oldest, as istiod's are), while the
// user's subsets stay served; a gateway namespace's rule would still take
// precedence (istiod's lookup order, tested in model).
func TestBackendTLSRuleAgainstUsersRule(t *testing.T) {
	in := backendTLSInput(t)
	res := gatewayapi.ConvertWithStatus(in.kube, gatewayapi.Options{}, goldenNow)
	user := config.Config{Meta: config.Meta{Kind: schema.DestinationRule, Namespace: "default", Name: "users",
		CreationTimestamp: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
		Spec: &networking.DestinationRule{Host: "echo.default.svc.cluster.local",
			TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}},
			Subsets:       []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}}}
	push := model.NewPushContext(memory.New(slices.Concat(res.Configs, []config.Config{user})), in)
	dr := push.DestinationRuleForHost("echo.default.svc.cluster.local")
	if dr == nil {
		t.Fatal("no rule for echo")
	}
	spec := dr.Spec.(*networking.DestinationRule)
	if spec.GetTrafficPolicy().GetTls().GetMode() != networking.ClientTLSSettings_SIMPLE {
		t.Errorf("the BackendTLSPolicy's TLS must govern echo, got %v", spec.GetTrafficPolicy())
	}
	if len(spec.GetSubsets()) != 1 {
		t.Errorf("the user's subsets must stay, got %v", spec.GetSubsets())
	}
	if st := res.Status.BackendTLSPolicies[types.NamespacedName{Namespace: "default", Name: "tls-upstream-echo"}]; len(st.Ancestors) != 1 {
		t.Errorf("want one ancestor (the Gateway), got %v", st)
	}
}
