package route

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	cookiev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// StatefulSessionFilterName is Envoy's stateful session filter, which the
// listener translator puts before the router of a connection manager whose
// routes carry a session (Gateway API sessionPersistence); it does nothing
// on a route without per-route config.
const StatefulSessionFilterName = "envoy.filters.http.stateful_session"

// Names of the session state extensions, as istiod writes them.
const (
	cookieSessionState = "envoy.http.stateful_session.cookie"
	headerSessionState = "envoy.http.stateful_session.header"
)

// statefulSession is the per-route config of a session: the cookie or
// header that names the upstream host a session sticks to. Not strict: a
// host that is gone is replaced by the load balancer's pick, as istiod's.
func statefulSession(s model.GatewayAPISession) (*statefulsessionv3.StatefulSessionPerRoute, error) {
	var state *corev3.TypedExtensionConfig
	if s.Header != "" {
		a, err := protoconv.ValidatedAny(&headerv3.HeaderBasedSessionState{Name: s.Header})
		if err != nil {
			return nil, err
		}
		state = &corev3.TypedExtensionConfig{Name: headerSessionState, TypedConfig: a}
	} else {
		cookie := &httpv3.Cookie{Name: s.Cookie, Path: s.Path}
		if s.TTL != "" {
			d, err := time.ParseDuration(s.TTL) // checked by model.GatewayAPISessions
			if err != nil {
				return nil, err
			}
			cookie.Ttl = durationpb.New(d)
		}
		a, err := protoconv.ValidatedAny(&cookiev3.CookieBasedSessionState{Cookie: cookie})
		if err != nil {
			return nil, err
		}
		state = &corev3.TypedExtensionConfig{Name: cookieSessionState, TypedConfig: a}
	}
	return &statefulsessionv3.StatefulSessionPerRoute{Override: &statefulsessionv3.StatefulSessionPerRoute_StatefulSession{
		StatefulSession: &statefulsessionv3.StatefulSession{SessionState: state},
	}}, nil
}

// HasSessions reports whether a VirtualService carries sessions for its
// routes (model.GatewayAPISessionsAnnotation), for which the listener
// translator adds the stateful session filter.
func HasSessions(annotations map[string]string) bool {
	s, err := model.GatewayAPISessions(annotations)
	return err == nil && len(s) > 0
}
