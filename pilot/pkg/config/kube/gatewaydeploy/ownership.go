package gatewaydeploy

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// HeldReason is the reason of the Programmed condition of a Gateway whose
// proxies are held back because an object the deployer does not manage
// has the name of one of its objects. The Gateway API's NoResources: the
// infrastructure the Gateway needs could not be made.
const HeldReason = "NoResources"

// ownedBy reports whether an object in the cluster is one the deployer
// made for Gateway g: labelled ManagedLabel and controlled by g (an
// ownerReference of the Gateway API group, kind Gateway, g's UID). When it
// is not, why names what is missing, for the Gateway's status.
func ownedBy(o metav1.Object, g *gw.Gateway) (ok bool, why string) {
	if o.GetLabels()[ManagedLabel] != ManagedLabelValue {
		return false, fmt.Sprintf("exists and is not managed by Wayfinder (no label %s: %s)", ManagedLabel, ManagedLabelValue)
	}
	c := metav1.GetControllerOf(o)
	switch {
	case c == nil || !isGatewayRef(*c):
		return false, "exists, labelled as Wayfinder's, but is not controlled by a Gateway"
	case c.UID == g.UID:
		return true, ""
	case c.Name == g.Name:
		// An earlier Gateway of the same name: the garbage collector
		// removes its objects; the new ones are made after.
		return false, "still belongs to an earlier Gateway of this name (waiting for it to be deleted)"
	}
	return false, fmt.Sprintf("belongs to Gateway %s/%s (their deployments have the same name)", o.GetNamespace(), c.Name)
}

// isGatewayRef reports whether an ownerReference names a Gateway API
// Gateway (any version of the group).
func isGatewayRef(r metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == gw.GroupName && r.Kind == "Gateway"
}

// Hold is why a Gateway's proxies are not deployed: the first of its
// objects whose name an object the deployer does not manage holds.
type Hold struct {
	// Kind and Name of the object in the way, in the Gateway's namespace.
	Kind, Name string
	// Why it is not the deployer's (ownedBy).
	Why string
}

// Message is the Programmed condition's message (after the controller
// name), naming the object in the way and what to do.
func (h Hold) Message() string {
	return fmt.Sprintf("proxies not deployed: %s %s %s; Wayfinder changes no object it did not create: delete or rename it, or deploy this Gateway yourself (annotation %s: \"false\")",
		h.Kind, h.Name, h.Why, gatewayapi.ManagedAnnotation)
}

// holds are the Gateways held back by the last pass, for the status
// writer, which reads them from its own pass (the same loop) and from
// /debug readers.
type holds struct {
	mu sync.Mutex
	m  map[types.NamespacedName]Hold
}

func (h *holds) set(g types.NamespacedName, v *Hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v == nil {
		delete(h.m, g)
		return
	}
	if h.m == nil {
		h.m = map[types.NamespacedName]Hold{}
	}
	h.m[g] = *v
}

// keep drops the entries of Gateways not in seen.
func (h *holds) keep(seen map[types.NamespacedName]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.m {
		if !seen[k] {
			delete(h.m, k)
		}
	}
}

func (h *holds) get(g types.NamespacedName) (Hold, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[g]
	return v, ok
}
