// Package manifests holds what `kubectl apply -k manifests/` installs: Istio's
// networking, telemetry and security CRDs (crds/) and the Wayfinder control plane (base/), and the
// Kubernetes Gateway API CRDs (crds/gateway-api/, applied separately). They
// are embedded so that tests apply exactly the files users apply.
package manifests

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed kustomization.yaml crds/*.yaml crds/gateway-api/*.yaml base/*.yaml
var files embed.FS

// FS is the embedded manifests: kustomization.yaml, crds/ and base/.
var FS fs.FS = files

// CRDsDir holds Istio's CRDs for the kinds Wayfinder reads (networking,
// telemetry and security), refreshed by `make crds`.
const CRDsDir = "crds"

// Document is one YAML document of a manifest file.
type Document struct {
	File  string // path inside FS, e.g. "base/deployment.yaml"
	Index int    // position in the file, from 0
	YAML  []byte
}

// String names the document for error messages.
func (d Document) String() string { return fmt.Sprintf("%s#%d", d.File, d.Index) }

// CRDs returns the documents of every file that crds/kustomization.yaml
// lists, in its order: Istio's CRDs.
func CRDs() ([]Document, error) {
	names, err := KustomizationResources(CRDsDir)
	if err != nil {
		return nil, err
	}
	var docs []Document
	for _, n := range names {
		d, err := Documents(path.Join(CRDsDir, n))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// GatewayAPICRDsDir holds the Gateway API CRDs, refreshed by
// `make gateway-api-crds` from the sigs.k8s.io/gateway-api module.
const GatewayAPICRDsDir = "crds/gateway-api"

// GatewayAPICRDs returns the documents of every file that
// crds/gateway-api/kustomization.yaml lists, in its order.
func GatewayAPICRDs() ([]Document, error) {
	names, err := KustomizationResources(GatewayAPICRDsDir)
	if err != nil {
		return nil, err
	}
	var docs []Document
	for _, n := range names {
		d, err := Documents(path.Join(GatewayAPICRDsDir, n))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// Base returns the documents of every file that base/kustomization.yaml
// lists, in its order: the objects that make up the control plane.
func Base() ([]Document, error) {
	names, err := KustomizationResources("base")
	if err != nil {
		return nil, err
	}
	var docs []Document
	for _, n := range names {
		d, err := Documents(path.Join("base", n))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// Documents splits one embedded file into its non-empty YAML documents.
func Documents(name string) ([]Document, error) {
	data, err := fs.ReadFile(FS, name)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []Document
	for {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if isEmpty(b) {
			continue
		}
		docs = append(docs, Document{File: name, Index: len(docs), YAML: b})
	}
}

// isEmpty reports whether a document holds only comments and blank lines.
func isEmpty(b []byte) bool {
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// KustomizationResources returns the resources listed by dir's
// kustomization.yaml ("." for the top level), in their order.
func KustomizationResources(dir string) ([]string, error) {
	name := path.Join(dir, "kustomization.yaml")
	data, err := fs.ReadFile(FS, name)
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := utilyaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return k.Resources, nil
}
