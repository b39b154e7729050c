package push

import (
	"fmt"
	"maps"
	"runtime/debug"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// MaxWarmGroups bounds the gateway configurations a push with no proxy
// translates ahead of their proxies (see Warm).
const MaxWarmGroups = 16

// Warm, when Options.WarmGateways is set, translates, ahead of any
// proxy, the gateway configuration each Gateway's selector picks out; the
// server calls it when a full push finds no proxy connected: on a replica's start, before it reports ready (in Kubernetes
// no gateway is sent to it until then), and while it has no gateway at
// all. The first gateway of that configuration to connect then finds its
// routes translated and their bytes encoded (the route cache and the
// interner hold them for the push), instead of waiting for a whole
// translation under the push lock with every other gateway behind it.
//
// Nothing from the warm-up is sent or reported: no group is made (a
// proxy's group depends on who it proves to be, which only its
// connection tells), its problems are found again by the proxy's own
// translation, and it runs without an identity, so it is handed no key
// material. A panic is logged and ends the warm-up; the proxy's own
// translation reports it as it would have. The caller holds the push
// lock.
func (t *Translator) Warm(st *State) {
	if !t.warm {
		return
	}
	seen := map[string]bool{}
	proxies := map[string]bool{}
	for _, gw := range st.Push.Gateways() {
		if len(seen) == MaxWarmGroups {
			return
		}
		p := warmProxy(gw)
		// Gateways of one namespace with one selector describe the same
		// proxy: match it against every Gateway once.
		id := p.Namespace + "/" + labels.SelectorFromSet(p.Labels).String()
		if proxies[id] {
			continue
		}
		proxies[id] = true
		gws := st.Push.GatewaysForProxy(p)
		key := model.GatewayGroupKey(gws)
		if len(gws) == 0 || seen[key] {
			continue
		}
		seen[key] = true
		if err := t.warmGateway(st, key, gws); err != nil {
			t.log.Error("gateway warm-up stopped; proxies are translated as they connect", "gateways", key, "err", err)
			return
		}
	}
}

// warmProxy is the proxy a Gateway's selector describes: exactly the
// selector's labels, in the Gateway's namespace.
func warmProxy(gw config.Config) *model.Proxy {
	sel := gw.Spec.(*networking.Gateway).GetSelector()
	return &model.Proxy{Type: model.Router, Namespace: gw.Namespace, Labels: maps.Clone(sel)}
}

func (t *Translator) warmGateway(st *State, key string, gws []config.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("translation panicked: %v\n%s", r, debug.Stack())
		}
	}()
	t.translations.WithLabelValues("gateway-warm").Inc()
	// The proxy that connects is most likely one without PROXY_CONFIG:
	// warm with the mesh default topology, as it will be translated.
	push := st.Push.WithGatewayTopology(st.Push.GatewayTopologyFor(&model.Proxy{}))
	res := t.gen.BuildGateway(push, gws, model.SecretScope{Authorizer: t.authz, Grants: t.grants})
	res.Secrets, res.UpstreamSecrets = nil, nil
	gatewayResources(t.intern, "warm/"+key, res)
	return nil
}
