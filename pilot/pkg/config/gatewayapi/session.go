package gatewayapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// maxSessionName is the CRD's bound on sessionName.
const maxSessionName = 128

// sessionPersistence converts a rule's sessionPersistence into the session
// its routes are served with, or nil. istiod 1.29 does not serve the field
// (its convertHTTPRoute does not read it; its own sticky sessions come from
// a Service label, behind a feature flag): Istio's model has no per-route
// session. Wayfinder carries it on the generated VirtualService
// (model.GatewayAPISessionsAnnotation, set by sessionsAnnotation) to the
// route translator, which writes Envoy's stateful_session per-route config:
// a cookie (Path "/"; Max-Age the absoluteTimeout of a Permanent cookie,
// none for a Session cookie) or a header naming the upstream host. Without
// sessionName the name is "session-" and a hash of the rule, so two rules
// never share one. A field that cannot be served is reported and, where the
// rest makes sense, left out; a session that cannot be served at all is
// reported and the rule served without it.
func (c *converter) sessionPersistence(src, rule string, sp *gw.SessionPersistence, backends int, field string) *model.GatewayAPISession {
	if sp == nil {
		return nil
	}
	name := deref(sp.SessionName, "")
	if len(name) > maxSessionName {
		c.errorf(src, field+".sessionName", "%d characters, more than %d; session not served", len(name), maxSessionName)
		return nil
	}
	if name == "" {
		sum := sha256.Sum256([]byte(rule))
		name = "session-" + hex.EncodeToString(sum[:4])
	}
	out := &model.GatewayAPISession{}
	switch typ := deref(sp.Type, gw.CookieBasedSessionPersistence); typ {
	case gw.CookieBasedSessionPersistence:
		if !isToken(name) {
			c.errorf(src, field+".sessionName", "%q is not a cookie name (RFC 6265 token); session not served", name)
			return nil
		}
		out.Cookie, out.Path = name, "/"
		lifetime := gw.SessionCookieLifetimeType
		if cc := sp.CookieConfig; cc != nil {
			lifetime = deref(cc.LifetimeType, lifetime)
		}
		switch lifetime {
		case gw.PermanentCookieLifetimeType:
			if sp.AbsoluteTimeout == nil {
				c.errorf(src, field+".absoluteTimeout", "required for a Permanent cookie; session not served")
				return nil
			}
			d, ok := c.timeout(src, string(*sp.AbsoluteTimeout), field+".absoluteTimeout")
			if !ok || d == 0 {
				return nil
			}
			out.TTL = d.String()
		case gw.SessionCookieLifetimeType:
			if sp.AbsoluteTimeout != nil {
				c.warnf(src, field+".absoluteTimeout", "not enforced for a Session cookie (the gateway keeps no session state); ignored")
			}
		default:
			c.errorf(src, field+".cookieConfig.lifetimeType", "%q is not Session or Permanent; session not served", lifetime)
			return nil
		}
	case gw.HeaderBasedSessionPersistence:
		if !isToken(name) {
			c.errorf(src, field+".sessionName", "%q is not a header name; session not served", name)
			return nil
		}
		out.Header = strings.ToLower(name)
		if sp.CookieConfig != nil {
			c.warnf(src, field+".cookieConfig", "ignored for a Header session")
		}
		if sp.AbsoluteTimeout != nil {
			c.warnf(src, field+".absoluteTimeout", "not enforced for a Header session (the gateway keeps no session state); ignored")
		}
	default:
		c.errorf(src, field+".type", "%q is not Cookie or Header; session not served", typ)
		return nil
	}
	if backends > 1 {
		c.warnf(src, field, "a session sticks to a host of the backend each request's weight picks: with %d backendRefs it may move between them", backends)
	}
	return out
}

// sessionsAnnotation is the model.GatewayAPISessionsAnnotation value for
// a VirtualService's routes: their sessions by route name ("" when none
// has one). JSON writes map keys sorted: the value is deterministic.
func sessionsAnnotation(routes []*sortedRoute) string {
	m := map[string]*model.GatewayAPISession{}
	for _, r := range routes {
		if r.session != nil {
			m[r.route.GetName()] = r.session
		}
	}
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // plain strings: cannot fail
	return string(b)
}

// isToken reports whether s is an RFC 7230 token, which cookie and header
// names must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}
