// Package manifest parses multi-document Kubernetes-style YAML into typed
// config objects: Istio config, and Kubernetes Gateway API objects, which
// it checks against their CRDs' schemas as an API server would on create
// (gatewayapi.go, openapi.go), and core v1 ConfigMaps, which hold the CAs
// of BackendTLSPolicies in file mode (configmap.go). Semantic checks of
// Istio config live in pkg/config/validation.
package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/blockyaml"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Options tune parsing.
type Options struct {
	// DefaultNamespace is given to objects without metadata.namespace.
	DefaultNamespace string
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
		ResourceVersion   string            `json:"resourceVersion"`
		Generation        int64             `json:"generation"`
		CreationTimestamp *time.Time        `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`

	// tree is the whole document when it was decoded by blockyaml and
	// filled the fields above without JSON (fromTree); Spec is then unset.
	tree map[string]any
}

var (
	jsonPosition = regexp.MustCompile(`\(line \d+:\d+\):\s*`)
)

// DocumentSource names document index (1-based) of file, as errors show it.
func DocumentSource(file string, index int) string {
	return fmt.Sprintf("%s (document %d)", file, index)
}

// Parse reads every document of data, a file named file. It returns the
// Istio config objects that parsed and one error per document that did
// not; an error never stops the other documents. Empty documents are
// skipped. Gateway API documents are checked as ParseAll does (their
// errors are returned) but not returned: use ParseAll to have them.
func Parse(file string, data []byte, opts Options) ([]config.Config, []*config.Error) {
	objs, errs := ParseAll(file, data, opts)
	return objs.Configs, errs
}

// ParseAll is Parse, also returning the Kubernetes Gateway API objects
// (gateway.networking.k8s.io/v1), checked against their CRDs' schemas.
func ParseAll(file string, data []byte, opts Options) (Objects, []*config.Error) {
	if opts.DefaultNamespace == "" {
		opts.DefaultNamespace = "default"
	}
	var out Objects
	var errs []*config.Error
	// Documents are numbered as a reader counts them: empty ones (a leading
	// "---", comments only) do not count.
	n := 0
	text := string(data)
	start := 0
	// firstLine is the file line of the document's first line, counted on
	// from the previous document's (counting from the top each time was
	// quadratic in a file of thousands of documents).
	firstLine, counted := 1, 0
	for _, loc := range append(separators(text), [2]int{len(text), len(text)}) {
		doc := text[start:loc[0]]
		firstLine += strings.Count(text[counted:start], "\n")
		counted = start
		start = loc[1]
		if blank(doc) {
			continue
		}
		n++
		src := DocumentSource(file, n)
		c, g, err := parseDocument([]byte(doc), src, firstLine, opts)
		switch {
		case err != nil:
			errs = append(errs, err)
		case g != nil:
			out.GatewayAPI = append(out.GatewayAPI, *g)
		default:
			out.Configs = append(out.Configs, c)
		}
	}
	return out, errs
}

// blank reports whether doc holds nothing but blank lines and comments.
func blank(doc string) bool {
	for line := range strings.Lines(doc) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

func parseDocument(doc []byte, src string, firstLine int, opts Options) (config.Config, *GatewayAPIObject, *config.Error) {
	var obj object
	var tree map[string]any
	inSubset := false
	if useSubset {
		tree, inSubset = blockyaml.Decode(doc)
	}
	// The document's JSON, made only when the tree does not serve.
	var js []byte
	var strictErr error
	toJSON := func() *config.Error {
		if js == nil {
			if js, strictErr = documentJSON(doc, tree, inSubset); js == nil {
				return &config.Error{Source: src, Message: "invalid YAML: " + strictErr.Error()}
			}
		}
		return nil
	}
	if !inSubset || !obj.fromTree(tree) {
		if err := toJSON(); err != nil {
			return config.Config{}, nil, err
		}
		obj = object{}
		dec := json.NewDecoder(bytes.NewReader(js))
		if err := dec.Decode(&obj); err != nil {
			return config.Config{}, nil, &config.Error{Source: src, Message: "invalid object: " + err.Error()}
		}
	}
	if obj.Kind == "" || obj.APIVersion == "" {
		return config.Config{}, nil, &config.Error{Source: src, Field: "kind", Message: "apiVersion and kind are required"}
	}
	if k, ok, err := schema.GatewayAPIByAPIVersion(obj.APIVersion, obj.Kind); ok {
		if err != nil {
			return config.Config{}, nil, &config.Error{Source: src, Field: "apiVersion", Message: err.Error()}
		}
		if msg := duplicateKeys(strictErr, firstLine); msg != "" {
			return config.Config{}, nil, &config.Error{Source: src, Message: msg + " (" + obj.Kind + " " + obj.Metadata.Name + ")"}
		}
		if err := toJSON(); err != nil {
			return config.Config{}, nil, err
		}
		g, gerr := parseGatewayAPI(js, &obj, k, src, opts)
		return config.Config{}, g, gerr
	}
	if isConfigMap(&obj) {
		// The CA of a BackendTLSPolicy (configmap.go).
		if err := toJSON(); err != nil {
			return config.Config{}, nil, err
		}
		g, gerr := parseConfigMap(js, &obj, src, opts)
		return config.Config{}, g, gerr
	}
	c, cerr := parseIstio(strictErr, &obj, src, firstLine, opts)
	return c, nil, cerr
}

// useSubset turns blockyaml on; tests turn it off to compare.
var useSubset = true

// documentJSON converts a YAML document to JSON: blockyaml's tree when
// the document is in its subset (nearly all config is; its JSON is byte
// for byte the full parser's), else sigs.k8s.io/yaml's strict conversion.
// strictErr is that conversion's error, which names duplicate keys; js is
// nil only when the document is not YAML at all (strictErr says why).
//
// One strict parse serves both the conversion and the duplicate-key
// check: without duplicates its JSON is what the plain decoder gives.
// Only a document it refuses is parsed again, plainly, so that the errors
// reported (and their order) stay those of the plain decoder.
func documentJSON(doc []byte, tree map[string]any, inSubset bool) (js []byte, strictErr error) {
	if inSubset {
		if js, err := json.Marshal(tree); err == nil {
			return js, nil
		}
	}
	if js, strictErr = yaml.YAMLToJSONStrict(doc); strictErr == nil {
		return js, nil
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return js, strictErr
}

// parseIstio decodes an Istio config document; strictErr is the strict
// YAML decoder's error on it (nil if none), which names duplicate keys.
func parseIstio(strictErr error, obj *object, src string, firstLine int, opts Options) (config.Config, *config.Error) {
	s, err := schema.ByAPIVersion(obj.APIVersion, obj.Kind)
	if err != nil {
		return config.Config{}, &config.Error{Source: src, Field: "apiVersion", Message: err.Error()}
	}
	key := config.Key{Kind: s.Kind, Namespace: obj.Metadata.Namespace, Name: obj.Metadata.Name}
	if key.Namespace == "" {
		key.Namespace = opts.DefaultNamespace
	}
	if key.Name == "" {
		return config.Config{}, &config.Error{Source: src, Key: key, Field: "metadata.name", Message: "name is required"}
	}
	if msg := duplicateKeys(strictErr, firstLine); msg != "" {
		return config.Config{}, &config.Error{Source: src, Key: key, Message: msg}
	}
	spec := s.NewSpec()
	// From blockyaml's tree when it decodes exactly as the JSON would;
	// else the JSON way, whose errors name the problem.
	if obj.tree != nil && obj.tree["spec"] != nil {
		if specFromTree(obj.tree["spec"], spec.ProtoReflect()) {
			return obj.config(s.Kind, key, src, spec), nil
		}
		proto.Reset(spec)
	}
	js, err := obj.specJSON(spec.ProtoReflect().Descriptor())
	if err != nil {
		if fe, ok := err.(*config.FieldError); ok {
			return config.Config{}, &config.Error{Source: src, Key: key, Field: fe.Field, Message: fe.Message}
		}
		return config.Config{}, &config.Error{Source: src, Key: key, Field: "spec", Message: err.Error()}
	}
	if js != nil {
		if err := protojson.Unmarshal(js, spec); err != nil {
			return config.Config{}, &config.Error{Source: src, Key: key, Field: "spec", Message: cleanProtoError(err)}
		}
	}
	return obj.config(s.Kind, key, src, spec), nil
}

// config is the object as a config.Config of kind with spec.
func (o *object) config(kind schema.Kind, key config.Key, src string, spec proto.Message) config.Config {
	c := config.Config{
		Meta: config.Meta{
			Kind: kind, Name: key.Name, Namespace: key.Namespace,
			Labels: o.Metadata.Labels, Annotations: o.Metadata.Annotations,
			ResourceVersion: o.Metadata.ResourceVersion, Generation: o.Metadata.Generation,
			Source: src,
		},
		Spec: spec,
	}
	if o.Metadata.CreationTimestamp != nil {
		c.CreationTimestamp = *o.Metadata.CreationTimestamp
	}
	return c
}

// cleanProtoError drops protojson's "proto:" prefix and its unstable
// non-breaking spaces so messages read (and golden files compare) the same.
func cleanProtoError(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\u00a0", " ")
	msg = strings.TrimPrefix(msg, "proto: ")
	msg = strings.TrimPrefix(msg, "proto:")
	// Positions refer to the JSON converted from YAML, not to the user's file.
	msg = jsonPosition.ReplaceAllString(msg, "")
	return strings.TrimSpace(msg)
}
