package validation

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// maxServiceAccounts is istiod's bound on serviceAccounts values.
const maxServiceAccounts = 16

// securityKey is istiod's security.ValidateAttribute for a when key
// (pkg/config/security/security.go): the check its values get, or why
// istiod refuses the key. Keys with a name in brackets must read a[b].
func securityKey(k string) (func(string) error, error) {
	switch {
	case strings.HasPrefix(k, "request.headers"):
		return nil, mapKey(k)
	case k == "source.ip", k == "remote.ip", k == "destination.ip":
		return checkAuthzIP, nil
	case k == "source.namespace", k == "source.principal", k == "request.auth.principal",
		k == "request.auth.audiences", k == "request.auth.presenter", k == "connection.sni":
		return nil, nil
	case k == "source.serviceAccount":
		return checkServiceAccount, nil
	case k == "source.trustDomain":
		return checkWildcardValue, nil
	case strings.HasPrefix(k, "request.auth.claims"):
		return nil, mapKey(k)
	case k == "destination.port":
		return checkAuthzPort, nil
	case strings.HasPrefix(k, "experimental.envoy.filters."):
		return nil, mapKey(k)
	case k == "destination.namespace":
		return nil, fmt.Errorf("attribute %s is replaced by the metadata.namespace", k)
	case strings.HasPrefix(k, "destination.labels"):
		return nil, fmt.Errorf("attribute %s is replaced by the workload selector", k)
	case k == "destination.name", k == "destination.user":
		return nil, fmt.Errorf("deprecated attribute %s: only supported in v1alpha1", k)
	}
	return nil, fmt.Errorf("unknown attribute: %s", k)
}

// customUnsupportedKey are the when keys istiod refuses in a CUSTOM
// policy.
func customUnsupportedKey(k string) bool {
	switch k {
	case "source.namespace", "source.serviceAccount", "source.trustDomain", "source.principal":
		return true
	}
	return strings.HasPrefix(k, "request.auth.")
}

// mapKey is istiod's validateMapKey: name[key] with a non-empty key.
func mapKey(k string) error {
	open := strings.Index(k, "[")
	if strings.HasSuffix(k, "]") && open > 0 && open < len(k)-2 {
		return nil
	}
	return fmt.Errorf("bad key %s: should have format a[b]", k)
}

// checkAuthzIP is istiod's security.ValidateIPs for one value: an address
// or a CIDR block. An IPv6 zone is refused (stricter: Envoy's CidrRange
// has no zone).
func checkAuthzIP(s string) error {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			// netip's error names the value: "netip.ParsePrefix(...): why".
			return fmt.Errorf("bad CIDR range: %v", err)
		}
		if p.Addr().Zone() != "" {
			return fmt.Errorf("bad CIDR range %s: an IPv6 zone is not supported", s)
		}
		return nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Errorf("bad IP address %s", s)
	}
	if a.Zone() != "" {
		return fmt.Errorf("bad IP address %s: an IPv6 zone is not supported", s)
	}
	return nil
}

// checkAuthzPort is istiod's security.ValidatePorts for one value: a
// decimal number in 0-65535.
func checkAuthzPort(s string) error {
	p, err := strconv.ParseUint(s, 10, 32)
	if err != nil || p > 65535 {
		return fmt.Errorf("bad port %s: want a number in 0-65535", s)
	}
	return nil
}

// checkServiceAccount is istiod's security.CheckServiceAccount for one
// value: "name" or "namespace/name", no wildcard, at most 320 characters.
func checkServiceAccount(s string) error {
	if strings.Contains(s, "*") {
		return errors.New("wildcard not allowed in a service account")
	}
	if n := strings.Count(s, "/"); n > 1 {
		return fmt.Errorf("expected format 'serviceAccount' or 'namespace/serviceAccount', found %q", s)
	}
	if len(s) > 320 {
		return fmt.Errorf("value cannot exceed 320 characters, found %d", len(s))
	}
	if ns, sa, ok := strings.Cut(s, "/"); ok {
		if ns == "" {
			return fmt.Errorf("expected format 'serviceAccount' or 'namespace/serviceAccount', found empty namespace in %q", s)
		}
		if sa == "" {
			return fmt.Errorf("expected format 'serviceAccount' or 'namespace/serviceAccount', found empty serviceAccount in %q", s)
		}
	}
	return nil
}

// checkWildcardValue is istiod's security.CheckWildcardValues for one
// value: at most one '*', at the start or the end.
func checkWildcardValue(s string) error {
	n := strings.Count(s, "*")
	if n > 1 {
		return fmt.Errorf("at most one wildcard is allowed, found %q", s)
	}
	if n == 1 && s != "*" && !strings.HasPrefix(s, "*") && !strings.HasSuffix(s, "*") {
		return fmt.Errorf("wildcard is only allowed at the start or end, found %q", s)
	}
	return nil
}

// checkTrustDomain is istiod's security.CheckTrustDomainValues for one
// value: a wildcard value without '/'.
func checkTrustDomain(s string) error {
	if err := checkWildcardValue(s); err != nil {
		return err
	}
	if strings.Contains(s, "/") {
		return fmt.Errorf("trust domain must not contain '/', found %q", s)
	}
	return nil
}

// pathLiteral is a segment of a path template that Envoy's
// uri_template matcher accepts: RFC 3986 pchars.
var pathLiteral = regexp.MustCompile("^[a-zA-Z0-9-._~%!$&'()+,;:@=]+$")

// checkPathTemplate is istiod's security.CheckValidPathTemplate for one
// path: {*} matches one segment, {**} any number and only last; no other
// braces; in a path with a template every other segment is a literal.
func checkPathTemplate(path string) error {
	hasTemplate := strings.Contains(path, "{*}") || strings.Contains(path, "{**}")
	seenAny := false
	trimmed := strings.Trim(path, "/")
	for _, seg := range strings.Split(trimmed, "/") {
		switch {
		case (seg == "{*}" || seg == "{**}") && seenAny:
			return fmt.Errorf("invalid or unsupported path %s: {**} is not the last operator", path)
		case seg == "{*}":
			continue
		case seg == "{**}":
			seenAny = true
			continue
		case strings.ContainsAny(seg, "{}"):
			return fmt.Errorf("invalid or unsupported path %s: contains '{' or '}' beyond a supported path template", path)
		case hasTemplate && !pathLiteral.MatchString(seg):
			return fmt.Errorf("invalid or unsupported path %s: segment %q is not a valid literal", path, seg)
		}
	}
	return nil
}
