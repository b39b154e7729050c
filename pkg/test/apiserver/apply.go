package apiserver

import (
	"context"
	"fmt"
	"time"

	"github.com/wayfinder-dev/wayfinder/manifests"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// FieldManager names the harness in server-side apply.
const FieldManager = "wayfinder-test-harness"

// ApplyOptions change how Apply sends objects.
type ApplyOptions struct {
	// DryRun asks the server to validate and admit the objects without
	// storing them.
	DryRun bool
}

// Apply server-side-applies YAML documents of any kind the server serves,
// in order, as AdminUser; it returns the objects the server answered with.
// Errors name the object.
func (c *Cluster) Apply(ctx context.Context, opts ApplyOptions, docs ...[]byte) ([]*unstructured.Unstructured, error) {
	return applyDocs(ctx, c.RESTConfig(), opts, docs)
}

func applyDocs(ctx context.Context, cfg *rest.Config, opts ApplyOptions, docs [][]byte) ([]*unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	var out []*unstructured.Unstructured
	for i, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return out, fmt.Errorf("document %d: %w", i, err)
		}
		gvk := obj.GroupVersionKind()
		name := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			// A kind defined by a CRD applied just before: look again.
			mapper.Reset()
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		po := metav1.PatchOptions{FieldManager: FieldManager, Force: new(true)}
		if opts.DryRun {
			po.DryRun = []string{metav1.DryRunAll}
		}
		got, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, po)
		if err != nil {
			return out, fmt.Errorf("applying %s: %w", name, err)
		}
		out = append(out, got)
	}
	return out, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyCRDs applies manifests/crds (Istio's) and, unless skipGatewayAPI,
// manifests/crds/gateway-api, and waits until every CRD is Established,
// i.e. its resources are served.
func applyCRDs(ctx context.Context, cfg *rest.Config, skipGatewayAPI bool) error {
	docs, err := manifests.CRDs()
	if err != nil {
		return err
	}
	if !skipGatewayAPI {
		gw, err := manifests.GatewayAPICRDs()
		if err != nil {
			return err
		}
		docs = append(docs, gw...)
	}
	return applyCRDDocs(ctx, cfg, docs)
}

// ApplyGatewayAPICRDs installs manifests/crds/gateway-api on a cluster
// started with SkipGatewayAPICRDs, and waits until they are Established.
func (c *Cluster) ApplyGatewayAPICRDs(ctx context.Context) error {
	docs, err := manifests.GatewayAPICRDs()
	if err != nil {
		return err
	}
	return applyCRDDocs(ctx, c.RESTConfig(), docs)
}

func applyCRDDocs(ctx context.Context, cfg *rest.Config, docs []manifests.Document) error {
	raw := make([][]byte, len(docs))
	for i, d := range docs {
		raw[i] = d.YAML
	}
	applied, err := applyDocs(ctx, cfg, ApplyOptions{}, raw)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range applied {
		name := crd.GetName()
		// The API server sets Established within moments; poll briefly.
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return conditionTrue(got, "Established"), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", name, err)
		}
	}
	return nil
}

func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
