package gatewayapi

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// anyOrigin is what istiod 1.29 matches for the origin "*": any
// well-formed origin, scheme://host(:port), as RFC 6454 writes it, rather
// than any string at all.
const anyOrigin = `^[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s?#]+$`

// cors converts an HTTPRoute CORS filter into an Istio CorsPolicy as
// istiod 1.29's createCorsFilter does (pilot/pkg/config/kube/gateway/
// conversion.go): origins without "*" match exactly, one trailing "*" is a
// prefix, "*" alone any well-formed origin, any other "*" the regex ".*";
// maxAge in seconds; preflights no origin matches are answered by the
// gateway (unmatchedPreflights IGNORE), never forwarded to the backend.
// An origin that cannot be matched is reported and left out, which only
// narrows what is allowed.
func (c *converter) cors(src string, f *gw.HTTPCORSFilter, field string) *networking.CorsPolicy {
	if f == nil {
		c.errorf(src, field, "a CORS filter needs its cors field; filter ignored")
		return nil
	}
	out := &networking.CorsPolicy{UnmatchedPreflights: networking.CorsPolicy_IGNORE}
	for i, o := range f.AllowOrigins {
		m, err := originMatch(string(o))
		if err != nil {
			c.errorf(src, fmt.Sprintf("%s.allowOrigins[%d]", field, i), "%v; origin left out", err)
			continue
		}
		if m != nil {
			out.AllowOrigins = append(out.AllowOrigins, m)
		}
	}
	if deref(f.AllowCredentials, false) {
		out.AllowCredentials = wrapperspb.Bool(true)
	}
	for _, m := range f.AllowMethods {
		out.AllowMethods = append(out.AllowMethods, string(m))
	}
	for _, h := range f.AllowHeaders {
		out.AllowHeaders = append(out.AllowHeaders, string(h))
	}
	for _, h := range f.ExposeHeaders {
		out.ExposeHeaders = append(out.ExposeHeaders, string(h))
	}
	if f.MaxAge < 0 {
		c.errorf(src, field+".maxAge", "%d is negative; ignored", f.MaxAge)
	} else if f.MaxAge > 0 {
		out.MaxAge = durationpb.New(time.Duration(f.MaxAge) * time.Second)
	}
	return out
}

// originMatch is the Istio match of one allowOrigins entry; nil for an
// empty one, which istiod skips.
func originMatch(o string) (*networking.StringMatch, error) {
	switch {
	case o == "":
		return nil, nil
	case o == "*":
		return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: anyOrigin}}, nil
	case !strings.Contains(o, "*"):
		return &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: o}}, nil
	case strings.Count(o, "*") == 1 && strings.HasSuffix(o, "*"):
		return &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: strings.TrimSuffix(o, "*")}}, nil
	}
	re := strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, ".*")
	if _, err := regexp.Compile(re); err != nil {
		return nil, fmt.Errorf("origin %q does not make a regular expression: %v", o, err)
	}
	return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "^" + re + "$"}}, nil
}
