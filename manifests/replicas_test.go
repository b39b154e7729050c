package manifests_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The control plane runs two replicas by default, spread over nodes, kept
// one serving by a PodDisruptionBudget, and given time to drain: the
// termination grace period exceeds the server's default drain duration
// plus its shutdown grace (20s + 5s).
func TestBaseRunsReplicasThatSurviveADisruption(t *testing.T) {
	objs := decodeBase(t)
	d := objs["Deployment/pilot-discovery"].(*appsv1.Deployment)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g <= 25 {
		t.Errorf("terminationGracePeriodSeconds %v, want more than drain (20s) plus shutdown grace (5s)", g)
	}
	var terms []string
	if a := pod.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			sel, err := metav1.LabelSelectorAsSelector(w.PodAffinityTerm.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			if w.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				terms = append(terms, w.PodAffinityTerm.TopologyKey)
			}
		}
	}
	if len(terms) != 1 {
		t.Errorf("affinity %+v, want one preferred anti-affinity term on kubernetes.io/hostname selecting the Deployment's pods", pod.Affinity)
	}
	pdb, ok := objs["PodDisruptionBudget/pilot-discovery"].(*policyv1.PodDisruptionBudget)
	if !ok {
		t.Fatal("no PodDisruptionBudget pilot-discovery")
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("PodDisruptionBudget selector %v does not select the Deployment's pods", pdb.Spec.Selector)
	}
	if m := pdb.Spec.MinAvailable; m == nil || m.IntValue() != 1 || m.IntValue() >= int(*d.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1 (below the replica count, so a node can still drain)", m)
	}
}
