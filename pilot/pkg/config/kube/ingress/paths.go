package ingress

import (
	"fmt"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "k8s.io/api/networking/v1"
)

// pathMatch is one Ingress path converted to VirtualService matches, with
// what ordering needs to know.
type pathMatch struct {
	// matches is nil for a path that matches every request.
	matches []*networking.HTTPMatchRequest
	// length is the length of the path the match is on, for "longest first".
	length int
	// exact is whether the path must match whole, for ties.
	exact bool
}

// catchAll reports whether the path matches every request.
func (m pathMatch) catchAll() bool { return m.matches == nil }

// convertPath turns an Ingress path into matches:
//
//   - Exact: the path exactly.
//   - Prefix: element-wise prefix, as Kubernetes defines it: "/foo" (or
//     "/foo/") matches "/foo" and "/foo/bar" but not "/foobar". Envoy's
//     prefix is character-wise, so this is two matches: exactly "/foo", or
//     prefix "/foo/". (Istio marks such VirtualServices to get Envoy's
//     path_separated_prefix, which means the same; the route translator
//     here has no such mark.) "/" matches everything.
//   - ImplementationSpecific, or no type: Istio's reading. "", "*", "/*"
//     and ".*" match everything; a path ending in "/*" or ".*" is an
//     element-wise prefix of the rest; anything else is exact.
func convertPath(p networkingv1.HTTPIngressPath) (pathMatch, error) {
	typ := networkingv1.PathTypeImplementationSpecific
	if p.PathType != nil {
		typ = *p.PathType
	}
	path := p.Path
	switch typ {
	case networkingv1.PathTypeExact:
		if !strings.HasPrefix(path, "/") {
			return pathMatch{}, fmt.Errorf("path %q must start with /", path)
		}
		return pathMatch{matches: []*networking.HTTPMatchRequest{exactMatch(path)}, length: len(path), exact: true}, nil
	case networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path, "/") {
			return pathMatch{}, fmt.Errorf("path %q must start with /", path)
		}
		return elementPrefix(path), nil
	case networkingv1.PathTypeImplementationSpecific:
		switch {
		case path == "" || path == "*" || path == "/*" || path == ".*":
			return pathMatch{length: len(path)}, nil
		case strings.HasSuffix(path, "/*"):
			return elementPrefix(strings.TrimSuffix(path, "/*")), nil
		case strings.HasSuffix(path, ".*"):
			return elementPrefix(strings.TrimSuffix(path, ".*")), nil
		case !strings.HasPrefix(path, "/"):
			return pathMatch{}, fmt.Errorf("path %q must start with /", path)
		}
		return pathMatch{matches: []*networking.HTTPMatchRequest{exactMatch(path)}, length: len(path), exact: true}, nil
	}
	return pathMatch{}, fmt.Errorf("pathType %q is not one of Exact, Prefix, ImplementationSpecific", typ)
}

// elementPrefix matches path and everything below it, element-wise.
func elementPrefix(path string) pathMatch {
	path = strings.TrimRight(path, "/")
	if path == "" {
		// "/" matches every request; so does a match-less route.
		return pathMatch{length: 1}
	}
	return pathMatch{
		matches: []*networking.HTTPMatchRequest{
			exactMatch(path),
			{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: path + "/"}}},
		},
		length: len(path),
	}
}

func exactMatch(path string) *networking.HTTPMatchRequest {
	return &networking.HTTPMatchRequest{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: path}}}
}
