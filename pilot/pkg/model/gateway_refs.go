package model

import (
	"fmt"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// reportMissingGateways warns about VirtualServices bound to a Gateway that
// does not exist: their routes reach no proxy through it until it does.
// Istio accepts such references silently; saying so saves a search.
func (ps *PushContext) reportMissingGateways() {
	exists := make(map[string]bool, len(ps.gateways))
	for _, gw := range ps.gateways {
		exists[gw.Namespace+"/"+gw.Name] = true
	}
	for _, vs := range ps.virtualServices {
		for i, ref := range vs.Spec.(*networking.VirtualService).GetGateways() {
			if ref == "mesh" {
				continue
			}
			if key := ResolveGatewayName(ref, vs.Namespace); !exists[key] {
				ps.Errors = append(ps.Errors, &config.Error{
					Source: vs.Source, Key: vs.Key(), Field: fmt.Sprintf("spec.gateways[%d]", i), Warning: true,
					Message: fmt.Sprintf("Gateway %s does not exist; these routes reach no gateway through it", key),
				})
			}
		}
	}
}
