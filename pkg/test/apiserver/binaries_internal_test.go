package apiserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestKubernetesVersionReadsBothRequireForms(t *testing.T) {
	for name, gomod := range map[string]string{
		"single": "module x\n\ngo 1.26\n\nrequire k8s.io/kubernetes v1.37.2\n",
		"block":  "module x\n\nrequire (\n\tk8s.io/api v0.37.2 // indirect\n\tk8s.io/kubernetes v1.37.2 // indirect\n)\n",
	} {
		p := filepath.Join(t.TempDir(), "go.mod")
		if err := os.WriteFile(p, []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := kubernetesVersion(p)
		if err != nil || v != "v1.37.2" {
			t.Errorf("%s: got %q, %v; want v1.37.2", name, v, err)
		}
	}
	p := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(p, []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetesVersion(p); err == nil {
		t.Error("a go.mod without k8s.io/kubernetes should be an error")
	}
}

// The cache path is the one tools/kube-apiserver/ensure.sh builds into.
func TestCachedKubeAPIServerPath(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	got := cachedKubeAPIServer()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetesVersion(filepath.Join(root, "tools", "kube-apiserver", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/cache/wayfinder/kube-apiserver-" + v; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	cmd := exec.Command("bash", filepath.Join(root, "tools", "kube-apiserver", "ensure.sh"), "--path")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME=/cache")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ensure.sh --path: %v", err)
	}
	if script := strings.TrimSpace(string(out)); script != got {
		t.Fatalf("ensure.sh --path says %q, the harness looks at %q", script, got)
	}
}
