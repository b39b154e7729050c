package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// GatewayAPISessionsAnnotation, on a VirtualService generated from Gateway
// API routes (one that also carries GatewayAPIRoutesAnnotation), holds the
// session persistence of its routes: a JSON object from HTTP route name to
// GatewayAPISession. Istio's HTTPRoute has no field for it; the gateway
// route translator reads it into Envoy's stateful_session per-route config,
// and the listener translator puts the stateful_session filter into the
// connection managers whose routes use it. On any other VirtualService it
// is ignored.
const GatewayAPISessionsAnnotation = "internal.wayfinder.io/gateway-api-sessions"

// GatewayAPISession is one route's session persistence: a cookie or a
// header (exactly one) naming the upstream host a session sticks to.
type GatewayAPISession struct {
	// Cookie is the cookie's name, for a cookie session.
	Cookie string `json:"cookie,omitempty"`
	// Path is the cookie's Path attribute.
	Path string `json:"path,omitempty"`
	// TTL is a permanent cookie's lifetime (Max-Age), a Go duration; empty
	// for a session cookie.
	TTL string `json:"ttl,omitempty"`
	// Header is the header's name, for a header session.
	Header string `json:"header,omitempty"`
}

// GatewayAPISessions reads the GatewayAPISessionsAnnotation of a generated
// VirtualService's annotations: nil when there is none (or the
// VirtualService is not generated from Gateway API routes).
func GatewayAPISessions(annotations map[string]string) (map[string]GatewayAPISession, error) {
	raw, ok := annotations[GatewayAPISessionsAnnotation]
	if !ok || annotations[GatewayAPIRoutesAnnotation] == "" {
		return nil, nil
	}
	var out map[string]GatewayAPISession
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("annotation %s: %v", GatewayAPISessionsAnnotation, err)
	}
	for name, s := range out {
		if (s.Cookie == "") == (s.Header == "") {
			return nil, fmt.Errorf("annotation %s: route %q: exactly one of cookie and header is required", GatewayAPISessionsAnnotation, name)
		}
		if s.TTL != "" {
			if d, err := time.ParseDuration(s.TTL); err != nil || d <= 0 {
				return nil, fmt.Errorf("annotation %s: route %q: ttl %q is not a positive duration", GatewayAPISessionsAnnotation, name, s.TTL)
			}
		}
	}
	return out, nil
}
