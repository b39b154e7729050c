package push

import (
	"fmt"
	"strings"

	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authn"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// securityCache keeps the gateway security computed for each proxy input
// (securityInputKey) across pushes, as long as the push's fingerprint of
// what security.ForProxy reads is the same. Under the push lock.
type securityCache struct {
	fingerprint string
	results     map[string]*model.GatewaySecurity
}

// generationer is a JWKS resolver that counts its key set changes.
type generationer interface{ Generation() uint64 }

// lookup returns the cached security for in when st's fingerprint is the
// cache's; a new fingerprint empties the cache.
func (c *securityCache) lookup(st *State, jwks authn.JWKSResolver, in string) (*model.GatewaySecurity, bool) {
	fp := st.securityFingerprint(jwks)
	if fp == "" {
		c.fingerprint, c.results = "", nil
		return nil, false
	}
	if fp != c.fingerprint {
		c.fingerprint, c.results = fp, map[string]*model.GatewaySecurity{}
		return nil, false
	}
	sec, ok := c.results[in]
	return sec, ok
}

func (c *securityCache) store(in string, sec *model.GatewaySecurity) {
	if c.results != nil {
		c.results[in] = sec
	}
}

// securityFingerprint names everything security.ForProxy reads of the
// push besides the proxy: the RequestAuthentications and
// AuthorizationPolicies (stores hand out the same spec for an unchanged
// object, so their identity stands for their content), the Gateways (which
// decide TCP chains), the mesh config, the root namespace and the JWKS
// resolver's key set generation; with a CUSTOM policy the services (its
// provider's cluster), and with a route-level policy nothing is reused
// (the routes served decide it): "". Computed once per push.
func (st *State) securityFingerprint(jwks authn.JWKSResolver) string {
	if st.securityFP != nil {
		return *st.securityFP
	}
	fp := computeSecurityFingerprint(st.Push, jwks)
	st.securityFP = &fp
	return fp
}

func computeSecurityFingerprint(push *model.PushContext, jwks authn.JWKSResolver) string {
	var b strings.Builder
	write := func(cfgs []config.Config) {
		for _, c := range cfgs {
			fmt.Fprintf(&b, "%s|%p|%s|%s;", c.Key(), c.Spec, c.CreationTimestamp, c.Annotations["istio.io/dry-run"])
		}
	}
	custom := false
	for _, c := range push.AuthorizationPolicies() {
		spec, _ := c.Spec.(*securityv1beta1.AuthorizationPolicy)
		if spec.GetAction() == securityv1beta1.AuthorizationPolicy_CUSTOM {
			custom = true
		}
		if len(policyattach.RouteTargets(c.Namespace, spec)) > 0 {
			return ""
		}
	}
	for _, c := range push.RequestAuthentications() {
		spec, _ := c.Spec.(*securityv1beta1.RequestAuthentication)
		if len(policyattach.RouteTargets(c.Namespace, spec)) > 0 {
			return ""
		}
	}
	write(push.RequestAuthentications())
	write(push.AuthorizationPolicies())
	write(push.Gateways())
	fmt.Fprintf(&b, "mesh %p root %s", push.Mesh(), push.RootNamespace())
	if g, ok := jwks.(generationer); ok {
		fmt.Fprintf(&b, " jwks %d", g.Generation())
	} else if jwks != nil {
		return "" // key sets may change without our knowing
	}
	if custom {
		fmt.Fprintf(&b, " services %d", push.ServicesEpoch())
	}
	return b.String()
}
