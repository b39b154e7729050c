package helm

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/wayfinder-dev/wayfinder/tests/kube/harness"
)

func TestPlaceholder(t *testing.T) {
	_ = loader.Load
	_ = chartutil.ToRenderValues
	_ = engine.Render
	_ = krusty.MakeKustomizer
	_ = filesys.MakeFsOnDisk
	_ = harness.Start
}
