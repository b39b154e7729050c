package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksOnlyTheKubernetesKindsItUses keeps client-go's generated
// clientsets, informer factories, scheme and leader election (and Istio's
// and the Gateway API's clientsets, which link client-go's discovery and
// scheme) out of the binary: they link every Kubernetes API group, whose
// init code and pages cost every process. pkg/kube/kclient replaces them.
func TestLinksOnlyTheKubernetesKindsItUses(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go/kubernetes",
		"k8s.io/client-go/informers",
		"k8s.io/client-go/tools/leaderelection",
		"k8s.io/client-go/metadata/metadatainformer",
		"k8s.io/client-go/discovery",
		"istio.io/client-go/pkg/clientset",
		"istio.io/client-go/pkg/informers",
		"sigs.k8s.io/gateway-api/pkg/client/clientset",
		"sigs.k8s.io/gateway-api/pkg/client/informers",
	}
	apiGroups := 0
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("pilot-discovery links %s", pkg)
			}
		}
		if strings.HasPrefix(pkg, "k8s.io/api/") {
			apiGroups++
		}
	}
	// core, discovery, networking, apps, coordination, authentication,
	// authorization and rbac v1 (the deployer's Secret Roles for Gateways).
	if apiGroups > 8 {
		t.Errorf("pilot-discovery links %d k8s.io/api packages, want at most 8", apiGroups)
	}
}
