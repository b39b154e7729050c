package validation

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// unixPrefix marks a Unix domain socket address in a bind or an endpoint.
const unixPrefix = "unix://"

// isDNS1123Label reports whether s is a lower-case RFC 1123 label of at
// most 63 characters: the form of namespaces, subset and port names.
func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i != 0 && i != len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isDNS1123Subdomain reports whether s is dot-separated DNS-1123 labels of
// at most 253 characters in all: the form of Kubernetes object names.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isDNS1123Label(l) {
			return false
		}
	}
	return true
}

// validateFQDN checks a domain name without wildcards: DNS-1123 labels, a
// top-level label that is not all digits (that would be an IP address), at
// most 255 characters, and an optional trailing dot.
func validateFQDN(name string) error {
	if name == "" {
		return errors.New("domain name must not be empty")
	}
	if len(name) > 255 {
		return fmt.Errorf("domain name %q is too long (at most 255 characters)", name)
	}
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	for _, l := range labels {
		if !isDNS1123Label(l) {
			return fmt.Errorf("domain name %q is invalid: label %q is not a lower-case DNS-1123 label", name, l)
		}
	}
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" {
		return fmt.Errorf("domain name %q is invalid: top-level label %q is all digits", name, tld)
	}
	return nil
}

// validateWildcardDomain checks a domain name that may start with a
// wildcard label: "*", "*.example.com" or "example.com". Partial wildcards
// such as "*foo.example.com" or "foo.*.com" are rejected: Envoy matches
// them differently from what Istio documents.
func validateWildcardDomain(name string) error {
	if name == "*" {
		return nil
	}
	rest, wild := strings.CutPrefix(name, "*.")
	if strings.Contains(rest, "*") {
		return fmt.Errorf("domain name %q is invalid: a wildcard may only be a whole first label (\"*\" or \"*.example.com\")", name)
	}
	if err := validateFQDN(rest); err != nil {
		if wild {
			return fmt.Errorf("domain name %q is invalid: %w", name, err)
		}
		return err
	}
	return nil
}

// isIP reports whether s is an IPv4 or IPv6 address without a zone.
func isIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}

// validateIPOrCIDR checks an address ("10.0.0.1", "2001:db8::1") or a
// prefix in CIDR notation ("10.0.0.0/8").
func validateIPOrCIDR(s string) error {
	if strings.Contains(s, "/") {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%q is not a valid CIDR block", s)
		}
		return nil
	}
	if !isIP(s) {
		return fmt.Errorf("%q is not a valid IP address or CIDR block", s)
	}
	return nil
}

// validateUnixAddress checks the part after "unix://": an absolute file
// path, or "@name" for a Linux abstract socket.
func validateUnixAddress(addr string) error {
	switch {
	case addr == "":
		return errors.New("unix domain socket path must not be empty")
	case strings.HasPrefix(addr, "@"):
		return nil
	case !path.IsAbs(addr) || strings.HasSuffix(addr, "/"):
		return fmt.Errorf("unix domain socket %q must be an absolute path to a file, or @name", addr)
	}
	return nil
}

// checkPort reports a port number outside 1-65535.
func (v *validator) checkPort(field string, n uint32) {
	if n < 1 || n > 65535 {
		v.add(field, "port number %d must be in the range 1-65535", n)
	}
}

// protocol is a port protocol as Istio names it.
type protocol string

// protocols maps Istio's port protocol names, lower-cased, to their
// canonical spelling. Istio matches them ignoring case.
var protocols = map[string]protocol{
	"http": "HTTP", "http2": "HTTP2", "https": "HTTPS", "grpc": "GRPC", "grpc-web": "GRPC-Web",
	"http_proxy": "HTTP_PROXY", "tcp": "TCP", "tls": "TLS", "udp": "UDP",
	"mongo": "Mongo", "redis": "Redis", "mysql": "MySQL",
}

// protocolList is the accepted names, for messages.
const protocolList = "HTTP, HTTP2, HTTPS, GRPC, GRPC-Web, HTTP_PROXY, TCP, TLS, UDP, Mongo, Redis, MySQL"

func parseProtocol(s string) (protocol, bool) {
	p, ok := protocols[strings.ToLower(s)]
	return p, ok
}

func (p protocol) isHTTP() bool {
	return p == "HTTP" || p == "HTTP2" || p == "GRPC" || p == "GRPC-Web" || p == "HTTP_PROXY"
}

func (p protocol) isTLS() bool { return p == "HTTPS" || p == "TLS" }

// validateLabelKey checks a Kubernetes label key: an optional DNS-1123
// subdomain prefix and "/", then a name of at most 63 characters of
// letters, digits, '-', '_' and '.', starting and ending alphanumeric.
func validateLabelKey(k string) error {
	if k == "" {
		return errors.New("label key must not be empty")
	}
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name = k
	} else if !isDNS1123Subdomain(prefix) {
		return fmt.Errorf("label key %q: prefix %q is not a DNS-1123 subdomain", k, prefix)
	}
	if !isLabelName(name) {
		return fmt.Errorf("label key %q: name %q must be at most 63 letters, digits, '-', '_' or '.', "+
			"starting and ending with a letter or digit", k, name)
	}
	return nil
}

// validateLabelValue checks a Kubernetes label value: empty, or a label
// name (see validateLabelKey).
func validateLabelValue(val string) error {
	if val != "" && !isLabelName(val) {
		return fmt.Errorf("label value %q must be empty or at most 63 letters, digits, '-', '_' or '.', "+
			"starting and ending with a letter or digit", val)
	}
	return nil
}

func isLabelName(s string) bool {
	if s == "" || len(s) > 63 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// labels checks a label map (selector, subset labels, ...), each entry at
// field[key], in key order.
func (v *validator) labels(field string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		v.label(key(field, k), k, m[k])
	}
}

func (v *validator) label(field, k, val string) {
	if err := validateLabelKey(k); err != nil {
		v.addErr(field, err)
	}
	if err := validateLabelValue(val); err != nil {
		v.addErr(field, err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isToken reports whether s is an RFC 9110 token, the syntax of a header
// name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// validateHeaderValue checks a value Envoy will add to a request or
// response. Envoy reads "%NAME%" and "%NAME(arg)%" as variables and "%%" as
// a literal '%'; anything else with a '%' makes it reject the whole route
// configuration, so it must be caught here.
func validateHeaderValue(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("header value is not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return fmt.Errorf("header value %q contains a control character", s)
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			i++
			continue
		}
		end, ok := scanVariable(s, i+1)
		if !ok {
			return fmt.Errorf("header value %q has a bad %%-expression at offset %d: "+
				"write %%%% for a literal %%, or %%NAME%% / %%NAME(arg)%% for a variable", s, i)
		}
		i = end
	}
	return nil
}

// scanVariable reads NAME, an optional "(...)" and an optional ":N" from
// s[start:], then the closing '%'. It returns the index of that '%'.
func scanVariable(s string, start int) (int, bool) {
	i := start
	for i < len(s) && (s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	if i == start || s[start] < 'A' || s[start] > 'Z' {
		return 0, false
	}
	if i < len(s) && s[i] == '(' {
		closing := strings.IndexByte(s[i:], ')')
		if closing < 0 {
			return 0, false
		}
		i += closing + 1
	}
	if i < len(s) && s[i] == ':' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i >= len(s) || s[i] != '%' {
		return 0, false
	}
	return i, true
}
