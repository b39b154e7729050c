package helm

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The replica options render what they name: a required anti-affinity,
// none, a drain duration passed as the flag with its grace period, and a
// disabled PodDisruptionBudget.
func TestReplicaValues(t *testing.T) {
	objs, _ := render(t, `
antiAffinity: required
drainDuration: 40s
terminationGracePeriodSeconds: 60
podDisruptionBudget: {enabled: false}
`)
	d := objs["Deployment/"+namespace+"/pilot-discovery"]
	req, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
	if len(req) != 1 || req[0].(map[string]any)["topologyKey"] != "kubernetes.io/hostname" {
		t.Errorf("required anti-affinity %v", req)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(d, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"); found {
		t.Error("antiAffinity required still renders the preferred term")
	}
	if g := num(d, "spec", "template", "spec", "terminationGracePeriodSeconds"); g != 60 {
		t.Errorf("terminationGracePeriodSeconds %v", g)
	}
	if args := strs(container(t, objs)["args"]); !slices.Contains(args, "--drain-duration=40s") {
		t.Errorf("args %v lack --drain-duration=40s", args)
	}
	if _, ok := objs["PodDisruptionBudget/"+namespace+"/pilot-discovery"]; ok {
		t.Error("podDisruptionBudget.enabled=false still renders it")
	}

	objs, _ = render(t, `antiAffinity: none`)
	if a, found, _ := unstructured.NestedFieldNoCopy(objs["Deployment/"+namespace+"/pilot-discovery"], "spec", "template", "spec", "affinity"); found {
		t.Errorf("antiAffinity none renders affinity %v", a)
	}
	if args := strs(container(t, objs)["args"]); hasFlag(args, "--drain-duration") {
		t.Errorf("default drainDuration renders %v", args)
	}
}
