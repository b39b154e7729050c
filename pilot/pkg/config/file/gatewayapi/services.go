package gatewayapi

import (
	"slices"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// ServicesFromEntries answers gatewayapi.Input.Services from the
// ServiceEntries of a config store, where there is no Kubernetes (file
// mode): Service NAME of namespace NS exists when a ServiceEntry has the
// host NAME.NS.svc.SUFFIX, with that entry's ports (a ServiceEntry of NS
// first, then of any namespace in name order, as hosts are global).
func ServicesFromEntries(store model.ConfigStore, domainSuffix string) func(namespace, name string) *corev1.Service {
	if domainSuffix == "" {
		domainSuffix = model.DefaultDomainSuffix
	}
	return func(namespace, name string) *corev1.Service {
		host := name + "." + namespace + ".svc." + domainSuffix
		entries := store.List(schema.ServiceEntry, "")
		// Entries of the namespace first (0), then the rest (1), each in
		// the store's order.
		other := func(c config.Config) int {
			if c.Namespace == namespace {
				return 0
			}
			return 1
		}
		slices.SortStableFunc(entries, func(a, b config.Config) int { return other(a) - other(b) })
		for _, e := range entries {
			se, ok := e.Spec.(*networking.ServiceEntry)
			if !ok || !slices.Contains(se.GetHosts(), host) {
				continue
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
			for _, p := range se.GetPorts() {
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.GetName(), Port: int32(p.GetNumber())})
			}
			return svc
		}
		return nil
	}
}
