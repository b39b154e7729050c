package listener

import (
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
)

// emptyStatefulSession is the stateful session filter's listener config:
// no session state, so it does nothing but on routes whose per-route
// config (route.StatefulSessionFilterName) names one.
var emptyStatefulSession = &statefulsessionv3.StatefulSession{}

// usesSessions reports whether a VirtualService bound to the Gateway of
// one of servers carries sessions for its routes (Gateway API
// sessionPersistence, model.GatewayAPISessionsAnnotation): only then does
// the connection manager get the stateful session filter, so the
// listeners of gateways without sessions stay as they were.
func usesSessions(push *model.PushContext, servers []model.GatewayServer) bool {
	if push == nil {
		return false
	}
	seen := map[string]bool{}
	for _, s := range servers {
		gwKey := s.Gateway.Namespace + "/" + s.Gateway.Name
		if seen[gwKey] {
			continue
		}
		seen[gwKey] = true
		vss := push.VirtualServicesForGateway(gwKey)
		for i := range vss {
			if route.HasSessions(vss[i].Annotations) {
				return true
			}
		}
	}
	return false
}
