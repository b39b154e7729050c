package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Config is a mesh config as Wayfinder uses it: istiod's defaults with one
// source applied, validated. It is never changed after Parse returns it;
// share it freely.
type Config struct {
	// Mesh is the merged MeshConfig. Read only.
	Mesh *meshconfig.MeshConfig
	// Source is where it came from (zero for the defaults alone).
	Source Source
	// Warnings are problems that do not refuse the config, because istiod
	// accepts them too: an extension provider that fails istiod's checks
	// (istiod only warns; such a provider cannot be used), a default
	// provider no extension provider is named for, a JSON access log
	// format that is not a JSON object. Each names its field.
	Warnings []*config.Error
	// Set lists, sorted, the paths of the fields the source sets.
	Set []string
	// Unknown lists, sorted, the paths of names the source uses that
	// MeshConfig has no field for. Like istiod, Wayfinder drops them.
	Unknown []string

	invalid map[string]error
}

// Ignored returns, sorted, the fields the source sets that Wayfinder does
// not read (see ReadFields), each at its highest level, for the caller to log
// once by name: "outboundTrafficPolicy", "defaultConfig.proxyMetadata".
func (c *Config) Ignored() []string { return ignored(c.Set) }

// Provider returns the extension provider named name. It fails when no
// provider has that name, or when the provider failed istiod's checks
// (see Warnings): istiod keeps such a mesh config but cannot build the
// provider, and neither can Wayfinder.
func (c *Config) Provider(name string) (*meshconfig.MeshConfig_ExtensionProvider, error) {
	if err := c.invalid[name]; err != nil {
		return nil, fmt.Errorf("extension provider %q is invalid: %w", name, err)
	}
	for _, p := range c.Mesh.GetExtensionProviders() {
		if p.GetName() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no extension provider is named %q in the mesh config", name)
}

// Default is the mesh config of a Wayfinder given none: istiod's defaults.
func Default() *Config {
	c, err := Apply(Source{}, nil, DefaultMeshConfig())
	if err != nil {
		panic("mesh: istiod's defaults do not validate: " + err.Error())
	}
	return c
}

// Parse applies the MeshConfig YAML data, from src, onto istiod's defaults
// and validates the result, as istiod reads its mesh config file or
// ConfigMap. Empty data gives the defaults, as in istiod. The error joins
// one *config.Error per problem, each naming src and, where there is one,
// the field ("extensionProviders[2].zipkin.port").
func Parse(src Source, data []byte) (*Config, error) {
	return Apply(src, data, DefaultMeshConfig())
}

// Apply applies data onto base (istiod's defaults when nil), which it
// does not change, with istiod's rules (ApplyMeshConfig in istiod's
// pkg/config/mesh):
//
//   - a top-level field the YAML sets replaces base's field whole (a list
//     is replaced, not appended to; a field set to its zero value, such as
//     enableTracing: false, is set so); a field set to null is left alone;
//   - defaultConfig is merged instead: each ProxyConfig field it sets
//     replaces base's, proxyMetadata keeps base's keys it does not set,
//     and proxyHeaders keeps base's forwardedClientCert, requestId,
//     server, attemptCount and envoyDebugHeaders when it leaves them unset;
//   - defaultProviders is merged field by field (accessLogging, tracing,
//     metrics each replaced only when set);
//   - extensionProviders are merged by name: a provider named like one in
//     base replaces that one's kind and settings in place, others are
//     appended in order, and base's providers are never removed; two
//     providers with one name in data collapse into the later one, at
//     the place of the earlier (a warning says so);
//   - trustDomainAliases become the sorted union of base's and data's.
//
// Names MeshConfig does not have are dropped (istiod retries its decode
// allowing unknown fields); they are listed in Config.Unknown. Apply is
// what a second, layered source (istiod's SHARED_MESH_CONFIG) needs:
// apply the user's layer onto the result of the first.
func Apply(src Source, data []byte, base *meshconfig.MeshConfig) (*Config, error) {
	fail := func(errs ...*config.FieldError) error {
		out := make([]error, 0, len(errs))
		for _, e := range errs {
			out = append(out, &config.Error{Source: src.String(), Field: fieldOf(e), Message: e.Message})
		}
		return errors.Join(out...)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &config.Error{Source: src.String(), Message: "not valid YAML: " + err.Error()}
	}
	if isNull(js) {
		js = []byte("{}") // an empty document, or only comments: the defaults
	}
	md := (&meshconfig.MeshConfig{}).ProtoReflect().Descriptor()
	top, ok := object(js)
	if !ok {
		return nil, fail(config.FieldErrorf("", "the mesh config must be a mapping of fields, not %s", kindOf(js)))
	}
	doc := &meshconfig.MeshConfig{}
	decodeErr := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(js, doc)
	s := &scan{}
	s.walk(md, "", js, decodeErr != nil)
	if decodeErr != nil || len(s.errs) > 0 {
		if len(s.errs) == 0 {
			s.errs = append(s.errs, config.FieldErrorf("", "%s", cleanError(decodeErr)))
		}
		return nil, fail(s.errs...)
	}

	if base == nil {
		base = DefaultMeshConfig()
	}
	out := proto.Clone(base).(*meshconfig.MeshConfig)
	m := &merger{out: out, warnings: nil}
	m.apply(doc, top)
	errs, warns, invalid := validate(out, m.providerPath)
	warns = append(m.warnings, warns...)
	if len(errs) > 0 {
		return nil, fail(errs...)
	}
	c := &Config{Mesh: out, Source: src, Unknown: s.unknown, invalid: invalid}
	c.Set = s.set
	slices.Sort(c.Set)
	slices.Sort(c.Unknown)
	for _, w := range warns {
		c.Warnings = append(c.Warnings, &config.Error{Source: src.String(), Field: fieldOf(w), Message: w.Message, Warning: true})
	}
	return c, nil
}

// fieldOf is a FieldError's field, empty for the document as a whole.
func fieldOf(e *config.FieldError) string {
	if e.Field == "(document)" {
		return ""
	}
	return e.Field
}

// merger applies a decoded document onto a clone of the base config.
type merger struct {
	out      *meshconfig.MeshConfig
	warnings []*config.FieldError
	// origin maps each merged extension provider, by name, to the index
	// in the document of the definition it took, so that problems name
	// the provider where the user wrote it.
	origin map[string]int
}

// providerPath is the path of the merged extension provider i: its place
// in the document that defined it, or, for one only the base holds, its
// name ("extensionProviders[\"prometheus\"]").
func (m *merger) providerPath(i int) string {
	p := m.out.GetExtensionProviders()[i]
	if j, ok := m.origin[p.GetName()]; ok {
		return index("extensionProviders", j)
	}
	return "extensionProviders[" + strconv.Quote(p.GetName()) + "]"
}

func (m *merger) apply(doc *meshconfig.MeshConfig, top map[string]json.RawMessage) {
	out := m.out
	prevProxy := out.DefaultConfig
	prevProviders := out.ExtensionProviders
	prevAliases := out.TrustDomainAliases
	md := out.ProtoReflect().Descriptor()

	// istiod finds defaultConfig and defaultProviders in the raw document
	// by these names only; written in snake_case they are decoded and then
	// dropped. So they are here, with a warning.
	setProxy := !isNull(top["defaultConfig"])
	setDefaults := !isNull(top["defaultProviders"])
	for _, name := range [][2]string{{"defaultConfig", "default_config"}, {"defaultProviders", "default_providers"}} {
		camel, snake := name[0], name[1]
		if !isNull(top[snake]) && isNull(top[camel]) {
			m.warnings = append(m.warnings, config.FieldErrorf(snake,
				"ignored: istiod reads this field only when it is spelled %s", camel))
		}
	}
	var setProviders bool
	var fields []protoreflect.FieldDescriptor
	for _, fd := range present(md, top) {
		switch fd.JSONName() {
		case "defaultConfig", "defaultProviders":
		case "extensionProviders":
			setProviders = true
		default:
			fields = append(fields, fd)
		}
	}
	overlay(out.ProtoReflect(), doc.ProtoReflect(), fields)

	if setProxy {
		if prevProxy == nil {
			prevProxy = &meshconfig.ProxyConfig{}
		}
		obj, _ := object(top["defaultConfig"])
		mergeProxyConfig(prevProxy, doc.DefaultConfig, present(prevProxy.ProtoReflect().Descriptor(), obj))
		out.DefaultConfig = prevProxy
	}
	if setDefaults {
		if out.DefaultProviders == nil {
			out.DefaultProviders = &meshconfig.MeshConfig_DefaultProviders{}
		}
		obj, _ := object(top["defaultProviders"])
		overlay(out.DefaultProviders.ProtoReflect(), doc.DefaultProviders.ProtoReflect(),
			present(out.DefaultProviders.ProtoReflect().Descriptor(), obj))
	}
	if setProviders {
		out.ExtensionProviders = m.mergeProviders(prevProviders, doc.ExtensionProviders)
	}
	aliases := append(slices.Clone(out.TrustDomainAliases), prevAliases...)
	slices.Sort(aliases)
	out.TrustDomainAliases = slices.Compact(aliases)
}

// overlay sets each of fields on dst to src's value, replacing it whole;
// a field src holds at its zero value is cleared. This is what istiod's
// decoder does to a message that already holds values.
func overlay(dst, src protoreflect.Message, fields []protoreflect.FieldDescriptor) {
	for _, fd := range fields {
		if src.Has(fd) {
			dst.Set(fd, src.Get(fd))
		} else {
			dst.Clear(fd)
		}
	}
}

// mergeProxyConfig merges the defaultConfig a document sets into dst
// (istiod's MergeProxyConfig).
func mergeProxyConfig(dst, src *meshconfig.ProxyConfig, fields []protoreflect.FieldDescriptor) {
	prevMetadata := dst.ProxyMetadata
	prevHeaders := dst.ProxyHeaders
	overlay(dst.ProtoReflect(), src.ProtoReflect(), fields)
	if prevMetadata != nil || dst.ProxyMetadata != nil {
		merged := make(map[string]string, len(prevMetadata)+len(dst.ProxyMetadata))
		for k, v := range prevMetadata {
			merged[k] = v
		}
		for k, v := range dst.ProxyMetadata {
			merged[k] = v
		}
		dst.ProxyMetadata = merged
	}
	if h := dst.ProxyHeaders; h != nil && prevHeaders != nil && h != prevHeaders {
		if h.ForwardedClientCert == meshconfig.ForwardClientCertDetails_UNDEFINED {
			h.ForwardedClientCert = prevHeaders.ForwardedClientCert
		}
		if h.RequestId == nil {
			h.RequestId = prevHeaders.RequestId
		}
		if h.AttemptCount == nil {
			h.AttemptCount = prevHeaders.AttemptCount
		}
		if h.Server == nil {
			h.Server = prevHeaders.Server
		}
		if h.EnvoyDebugHeaders == nil {
			h.EnvoyDebugHeaders = prevHeaders.EnvoyDebugHeaders
		}
	}
}

// mergeProviders merges the document's extension providers into base's by
// name, as istiod does.
func (m *merger) mergeProviders(base, doc []*meshconfig.MeshConfig_ExtensionProvider) []*meshconfig.MeshConfig_ExtensionProvider {
	out := base
	fromBase := len(base)
	firstIndex := map[string]int{} // name -> index in doc of its first definition
	m.origin = map[string]int{}
	for i, p := range doc {
		m.origin[p.GetName()] = i
		found := false
		for j, e := range out {
			if e.GetName() != p.GetName() {
				continue
			}
			e.Provider = p.Provider
			found = true
			if j >= fromBase {
				m.warnings = append(m.warnings, config.FieldErrorf("extensionProviders["+strconv.Itoa(i)+"].name",
					"%q is also the name of extensionProviders[%d]; this later definition replaces it, as in istiod",
					p.GetName(), firstIndex[p.GetName()]))
			}
			break
		}
		if !found {
			firstIndex[p.GetName()] = i
			out = append(out, p)
		}
	}
	return out
}
