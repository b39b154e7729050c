package mesh

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	envoytype "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// validate checks a merged mesh config with istiod's rules
// (ValidateMeshConfig in istiod's pkg/config/validation/agent). Errors
// refuse the config, as they make istiod refuse it. istiod only warns
// about extension providers that fail its checks (they may be unused), and
// so does Wayfinder: they come back as warnings and in invalid, by name,
// so that whatever names such a provider can be refused instead.
//
// istiod's checks of fields Wayfinder never reads and that cannot make a
// gateway's config wrong (localityLbSetting, serviceSettings, meshMTLS,
// tlsDefaults, and in defaultConfig statsdUdpAddress,
// envoyMetricsService, envoyAccessLogService and privateKeyProvider) are
// not made. providerPath(i) names the merged list's provider i the way
// the user wrote it.
func validate(m *meshconfig.MeshConfig, providerPath func(int) string) (errs, warns []*config.FieldError, invalid map[string]error) {
	v := &checker{}
	v.port("proxyListenPort", m.GetProxyListenPort())
	if err := durationAtLeastMs(m.GetConnectTimeout()); err != nil {
		v.err("connectTimeout", "%v", err)
	} else if d := m.GetConnectTimeout().AsDuration(); d > time.Hour {
		v.err("connectTimeout", "%v is longer than 1h", d)
	}
	if d := m.GetProtocolDetectionTimeout().AsDuration(); d%time.Millisecond != 0 {
		v.err("protocolDetectionTimeout", "only durations to ms precision are supported")
	}
	if m.GetDefaultConfig() == nil {
		v.err("defaultConfig", "missing")
	} else {
		v.proxyConfig("defaultConfig", m.GetDefaultConfig())
	}
	if err := validateTrustDomain(m.GetTrustDomain()); err != nil {
		v.err("trustDomain", "%v", err)
	}
	for i, d := range m.GetTrustDomainAliases() {
		if err := validateTrustDomain(d); err != nil {
			v.err(index("trustDomainAliases", i), "%v", err)
		}
	}

	// Accepted by istiod, but worth saying.
	if ns := m.GetRootNamespace(); !isDNS1123Label(ns) {
		v.warn("rootNamespace", "%q is not a namespace name, so no namespace is the root namespace: no Telemetry applies mesh-wide", ns)
	}
	if m.GetAccessLogEncoding() == meshconfig.MeshConfig_JSON && m.GetAccessLogFormat() != "" {
		if err := protojson.Unmarshal([]byte(m.GetAccessLogFormat()), &structpb.Struct{}); err != nil {
			v.warn("accessLogFormat", "with accessLogEncoding JSON this must be a JSON object; istiod uses its default JSON format instead (%s)", cleanError(err))
		}
	}
	invalid = v.providers(m.GetExtensionProviders(), providerPath)
	v.defaultProviders(m)
	return v.errs, v.warns, invalid
}

// checker collects problems, each at a field path.
type checker struct {
	errs, warns []*config.FieldError
}

func (v *checker) err(field, format string, args ...any) {
	v.errs = append(v.errs, config.FieldErrorf(field, format, args...))
}

func (v *checker) warn(field, format string, args ...any) {
	v.warns = append(v.warns, config.FieldErrorf(field, format, args...))
}

func (v *checker) port(field string, p int32) {
	if err := validatePort(int64(p)); err != nil {
		v.err(field, "%v", err)
	}
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// proxyConfig checks defaultConfig as istiod's ValidateMeshConfigProxyConfig
// does (the fields listed in validate's comment aside).
func (v *checker) proxyConfig(path string, pc *meshconfig.ProxyConfig) {
	if pc.GetConfigPath() == "" {
		v.err(path+".configPath", "must be set")
	}
	if pc.GetBinaryPath() == "" {
		v.err(path+".binaryPath", "must be set")
	}
	switch c := pc.GetClusterName().(type) {
	case *meshconfig.ProxyConfig_ServiceCluster:
		if c.ServiceCluster == "" {
			v.err(path+".serviceCluster", "must not be empty")
		}
	case *meshconfig.ProxyConfig_TracingServiceName_:
	default:
		v.err(path, "one of serviceCluster and tracingServiceName must be set")
	}
	if err := durationAtLeastMs(pc.GetDrainDuration()); err != nil {
		v.err(path+".drainDuration", "%v", err)
	} else if pc.GetDrainDuration().AsDuration()%time.Second != 0 {
		v.err(path+".drainDuration", "only durations to seconds precision are supported")
	}
	if pc.GetDiscoveryAddress() == "" {
		v.err(path+".discoveryAddress", "must be set")
	} else if err := validateProxyAddress(pc.GetDiscoveryAddress()); err != nil {
		v.err(path+".discoveryAddress", "%v", err)
	}
	v.tracing(path+".tracing", pc.GetTracing())
	v.port(path+".proxyAdminPort", pc.GetProxyAdminPort())
	v.port(path+".statusPort", pc.GetStatusPort())
	switch pc.GetControlPlaneAuthPolicy() {
	case meshconfig.AuthenticationPolicy_NONE, meshconfig.AuthenticationPolicy_MUTUAL_TLS:
	default:
		v.err(path+".controlPlaneAuthPolicy", "%s is not NONE or MUTUAL_TLS", pc.GetControlPlaneAuthPolicy())
	}
}

// tracing checks defaultConfig.tracing as istiod does: tracer addresses
// are host:port ("$(HOST_IP)" stands for the node's address), Lightstep
// needs an access token, the TLS settings are consistent, and no custom
// tag is empty.
func (v *checker) tracing(path string, t *meshconfig.Tracing) {
	if t == nil {
		return
	}
	hostIP := func(a string) string { return strings.Replace(a, "$(HOST_IP)", "127.0.0.1", 1) }
	if z := t.GetZipkin(); z != nil {
		if err := validateProxyAddress(hostIP(z.GetAddress())); err != nil {
			v.err(path+".zipkin.address", "%v", err)
		}
	}
	if d := t.GetDatadog(); d != nil {
		if err := validateProxyAddress(hostIP(d.GetAddress())); err != nil {
			v.err(path+".datadog.address", "%v", err)
		}
	}
	if l := t.GetLightstep(); l != nil {
		if err := validateProxyAddress(l.GetAddress()); err != nil {
			v.err(path+".lightstep.address", "%v", err)
		}
		if l.GetAccessToken() == "" {
			v.err(path+".lightstep.accessToken", "is required")
		}
	}
	v.tracingTLS(path+".tlsSettings", t.GetTlsSettings())
	for _, k := range sortedKeys(t.GetCustomTags()) {
		if t.GetCustomTags()[k] == nil {
			v.err(path+".customTags["+strconv.Quote(k)+"]", "must not be empty")
		}
	}
}

// tracingTLS is istiod's ValidateTLS with no configuration namespace.
func (v *checker) tracingTLS(path string, s *networking.ClientTLSSettings) {
	if s == nil {
		return
	}
	if strings.HasPrefix(s.GetCredentialName(), "configmap://") {
		v.err(path+".credentialName", "a configmap:// credential needs a configuration namespace, and the mesh config has none")
	}
	if s.GetInsecureSkipVerify().GetValue() {
		switch {
		case s.GetMode() == networking.ClientTLSSettings_SIMPLE &&
			(s.GetCaCertificates() != "" || s.GetCredentialName() != "" || s.GetSubjectAltNames() != nil):
			v.err(path, "caCertificates, credentialName and subjectAltNames cannot be set with insecureSkipVerify")
		case s.GetMode() == networking.ClientTLSSettings_MUTUAL &&
			(s.GetCaCertificates() != "" || s.GetSubjectAltNames() != nil):
			v.err(path, "caCertificates and subjectAltNames cannot be set with insecureSkipVerify")
		}
	}
	mode := s.GetMode()
	if (mode == networking.ClientTLSSettings_SIMPLE || mode == networking.ClientTLSSettings_MUTUAL) && s.GetCredentialName() != "" {
		if s.GetClientCertificate() != "" || s.GetCaCertificates() != "" || s.GetPrivateKey() != "" || s.GetCaCrl() != "" {
			v.err(path, "clientCertificate, caCertificates, privateKey and caCrl cannot be set with credentialName")
		}
		return
	}
	if mode == networking.ClientTLSSettings_MUTUAL {
		if s.GetClientCertificate() == "" {
			v.err(path+".clientCertificate", "is required for MUTUAL")
		}
		if s.GetPrivateKey() == "" {
			v.err(path+".privateKey", "is required for MUTUAL")
		}
	}
}

// providers checks the extension providers as istiod's
// validateExtensionProvider does, as warnings, and returns the invalid
// ones by name.
func (v *checker) providers(list []*meshconfig.MeshConfig_ExtensionProvider, providerPath func(int) string) map[string]error {
	invalid := map[string]error{}
	seen := map[string]bool{}
	for i, p := range list {
		path := providerPath(i)
		var problems []*config.FieldError
		bad := func(field, format string, args ...any) {
			f := path
			if field != "" {
				f += "." + field
			}
			problems = append(problems, config.FieldErrorf(f, format, args...))
		}
		switch {
		case p.GetName() == "":
			bad("name", "must not be empty")
		case seen[p.GetName()]:
			bad("name", "%q names an earlier provider too", p.GetName())
		}
		seen[p.GetName()] = true
		service := func(kind, svc string, port uint32) {
			if err := validateProviderService(svc); err != nil {
				bad(kind+".service", "%v", err)
			}
			if err := validatePort(int64(port)); err != nil {
				bad(kind+".port", "%v", err)
			}
		}
		switch k := p.GetProvider().(type) {
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp:
			c := k.EnvoyExtAuthzHttp
			service("envoyExtAuthzHttp", c.GetService(), c.GetPort())
			if err := validateStatusOnError(c.GetStatusOnError()); err != nil {
				bad("envoyExtAuthzHttp.statusOnError", "%v", err)
			}
			if pp := c.GetPathPrefix(); pp != "" {
				if _, err := url.Parse(pp); err != nil {
					bad("envoyExtAuthzHttp.pathPrefix", "%v", err)
				}
				if !strings.HasPrefix(pp, "/") {
					bad("envoyExtAuthzHttp.pathPrefix", "must begin with / (got %q)", pp)
				}
			}
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc:
			c := k.EnvoyExtAuthzGrpc
			service("envoyExtAuthzGrpc", c.GetService(), c.GetPort())
			if err := validateStatusOnError(c.GetStatusOnError()); err != nil {
				bad("envoyExtAuthzGrpc.statusOnError", "%v", err)
			}
		case *meshconfig.MeshConfig_ExtensionProvider_Zipkin:
			service("zipkin", k.Zipkin.GetService(), k.Zipkin.GetPort())
		case *meshconfig.MeshConfig_ExtensionProvider_Lightstep: //nolint:staticcheck // istiod still accepts it
			service("lightstep", k.Lightstep.GetService(), k.Lightstep.GetPort())
			if k.Lightstep.GetAccessToken() == "" {
				bad("lightstep.accessToken", "is required")
			}
		case *meshconfig.MeshConfig_ExtensionProvider_Datadog:
			service("datadog", k.Datadog.GetService(), k.Datadog.GetPort())
		case *meshconfig.MeshConfig_ExtensionProvider_Opencensus: //nolint:staticcheck // istiod still accepts it
			service("opencensus", k.Opencensus.GetService(), k.Opencensus.GetPort())
		case *meshconfig.MeshConfig_ExtensionProvider_Skywalking:
			service("skywalking", k.Skywalking.GetService(), k.Skywalking.GetPort())
		case *meshconfig.MeshConfig_ExtensionProvider_Prometheus,
			*meshconfig.MeshConfig_ExtensionProvider_Stackdriver,
			*meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog:
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyOtelAls:
			service("envoyOtelAls", k.EnvoyOtelAls.GetService(), k.EnvoyOtelAls.GetPort())
		case *meshconfig.MeshConfig_ExtensionProvider_Opentelemetry:
			service("opentelemetry", k.Opentelemetry.GetService(), k.Opentelemetry.GetPort())
			if k.Opentelemetry.GetGrpc() != nil && k.Opentelemetry.GetHttp() != nil {
				bad("opentelemetry", "grpc and http cannot both be set")
			}
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyHttpAls:
			service("envoyHttpAls", k.EnvoyHttpAls.GetService(), k.EnvoyHttpAls.GetPort())
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyTcpAls:
			service("envoyTcpAls", k.EnvoyTcpAls.GetService(), k.EnvoyTcpAls.GetPort())
		case nil:
			bad("", "no provider kind is set")
		default:
			// istiod 1.29 knows no other kind (sds came later).
			bad("", "provider kind %s is not supported", kindName(p))
		}
		for _, e := range problems {
			v.warn(e.Field, "%s; provider %q cannot be used", e.Message, p.GetName())
		}
		if len(problems) > 0 && p.GetName() != "" {
			if _, dup := invalid[p.GetName()]; !dup {
				msgs := make([]string, len(problems))
				for j, e := range problems {
					msgs[j] = e.Error()
				}
				invalid[p.GetName()] = errors.New(strings.Join(msgs, "; "))
			}
		}
	}
	return invalid
}

// kindName is the YAML name of a provider's kind ("sds").
func kindName(p *meshconfig.MeshConfig_ExtensionProvider) string {
	m := p.ProtoReflect()
	if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("provider")); fd != nil {
		return fd.JSONName()
	}
	return "(none)"
}

// defaultProviders warns about default providers no extension provider
// is named for; istiod skips them when it builds a proxy's telemetry.
func (v *checker) defaultProviders(m *meshconfig.MeshConfig) {
	names := map[string]bool{}
	for _, p := range m.GetExtensionProviders() {
		names[p.GetName()] = true
	}
	dp := m.GetDefaultProviders()
	for _, l := range []struct {
		field string
		names []string
	}{{"tracing", dp.GetTracing()}, {"metrics", dp.GetMetrics()}, {"accessLogging", dp.GetAccessLogging()}} {
		for i, n := range l.names {
			if !names[n] {
				v.warn(index("defaultProviders."+l.field, i), "no extension provider is named %q", n)
			}
		}
	}
}

// validatePort is istiod's ValidatePort.
func validatePort(p int64) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("port number %d must be in the range 1..65535", p)
	}
	return nil
}

// durationAtLeastMs is istiod's ValidateDuration: at least 1ms, in whole
// milliseconds.
func durationAtLeastMs(d *durationpb.Duration) error {
	dur := d.AsDuration()
	if dur < time.Millisecond {
		return errors.New("duration must be at least 1ms")
	}
	if dur%time.Millisecond != 0 {
		return errors.New("only durations to ms precision are supported")
	}
	return nil
}

// validateProxyAddress is istiod's ValidateProxyAddress: host:port, the
// host a domain name or an IP address.
func validateProxyAddress(addr string) error {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return fmt.Errorf("port %q is not a number", p)
	}
	if err := validatePort(int64(port)); err != nil {
		return err
	}
	if validateFQDN(host) != nil && !isIP(host) {
		return fmt.Errorf("%q is not a valid hostname or an IP address", host)
	}
	return nil
}

// validateProviderService is istiod's check of an extension provider's
// service: a host name or IP address ("otel.observability.svc.cluster.local"),
// or "namespace/host" with a fully qualified host.
func validateProviderService(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	ns, host, slash := strings.Cut(s, "/")
	if !slash {
		if validateFQDN(s) != nil && !isIP(s) {
			return fmt.Errorf("%q is not a valid hostname or an IP address", s)
		}
		return nil
	}
	if ns == "" || host == "" {
		return fmt.Errorf("%q: the namespace and the host of namespace/host must not be empty", s)
	}
	if ns != "*" && ns != "." && ns != "~" && !isDNS1123Label(ns) {
		return fmt.Errorf("%q: invalid namespace %q", s, ns)
	}
	if host != "*" && !strings.Contains(host, ".") {
		return fmt.Errorf("%q: short names (not fully qualified) are not allowed after namespace/", s)
	}
	if err := validateWildcardDomain(host); err != nil {
		return fmt.Errorf("%q: %v", s, err)
	}
	return nil
}

// validateStatusOnError is istiod's check of an ext_authz statusOnError:
// empty, or an HTTP status code Envoy knows.
func validateStatusOnError(s string) error {
	if s == "" {
		return nil
	}
	code, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	if _, ok := envoytype.StatusCode_name[int32(code)]; !ok {
		return fmt.Errorf("%s is not an HTTP status code Envoy supports", s)
	}
	return nil
}

// label is a DNS-1123 label as istiod's labels package accepts it (upper
// case letters allowed).
var (
	label         = regexp.MustCompile(`^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$`)
	wildcardLabel = regexp.MustCompile(`^(?:\*|(?:\*|\*-)?[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?)$`)
)

func isDNS1123Label(s string) bool { return len(s) <= 63 && label.MatchString(s) }

// validateFQDN is istiod's ValidateFQDN: at most 255 characters, labels,
// a top-level label not all digits, an optional trailing dot.
func validateFQDN(name string) error {
	if name == "" {
		return errors.New("empty domain name not allowed")
	}
	if len(name) > 255 {
		return fmt.Errorf("domain name %q too long (max 255)", name)
	}
	return validateLabels(name)
}

func validateLabels(name string) error {
	parts := strings.Split(name, ".")
	if _, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
		return fmt.Errorf("domain name %q invalid (top level domain %q cannot be all-numeric)", name, parts[len(parts)-1])
	}
	for i, l := range parts {
		if i == len(parts)-1 && l == "" {
			return nil
		}
		if !isDNS1123Label(l) {
			return fmt.Errorf("domain name %q invalid (label %q invalid)", name, l)
		}
	}
	return nil
}

// validateWildcardDomain is istiod's ValidateWildcardDomain plus its
// partial-wildcard check.
func validateWildcardDomain(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("domain name %q must have 1 to 255 characters", name)
	}
	if strings.Contains(name, "*") && name != "*" && !strings.HasPrefix(name, "*.") {
		return fmt.Errorf("partial wildcard %q not allowed", name)
	}
	first, rest, more := strings.Cut(name, ".")
	if len(first) > 63 || !wildcardLabel.MatchString(first) {
		return fmt.Errorf("domain name %q invalid (label %q invalid)", name, first)
	}
	if more {
		return validateLabels(rest)
	}
	return nil
}

// validateTrustDomain is istiod's ValidateTrustDomain.
func validateTrustDomain(d string) error {
	if d == "" {
		return errors.New("empty domain name not allowed")
	}
	parts := strings.Split(d, ".")
	for i, l := range parts {
		if i == len(parts)-1 && l == "" {
			return nil
		}
		if !isDNS1123Label(l) {
			return fmt.Errorf("trust domain name %q invalid", d)
		}
	}
	return nil
}

func isIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.IsValid()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
