package gatewayapi

import gw "sigs.k8s.io/gateway-api/apis/v1"

// grants answers whether a ReferenceGrant allows a reference across
// namespaces. A grant lives in the namespace of what is referred to.
type grants struct{ list []*gw.ReferenceGrant }

func newGrants(list []*gw.ReferenceGrant) *grants { return &grants{list: list} }

// allowed reports whether an object of fromKind (group gateway.networking.k8s.io)
// in fromNS may refer to the object toGroup/toKind toNS/toName.
func (g *grants) allowed(fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, rg := range g.list {
		if rg.Namespace != toNS {
			continue
		}
		fromOK := false
		for _, f := range rg.Spec.From {
			if string(f.Group) == Group && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				fromOK = true
				break
			}
		}
		if !fromOK {
			continue
		}
		for _, t := range rg.Spec.To {
			if string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || *t.Name == "" || string(*t.Name) == toName) {
				return true
			}
		}
	}
	return false
}
