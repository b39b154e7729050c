package apiserver

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Binaries are the programs a Cluster runs.
type Binaries struct {
	KubeAPIServer string
	Etcd          string
}

// ErrMissingBinaries is wrapped by FindBinaries' error when etcd or
// kube-apiserver is not installed; the error says what to run.
var ErrMissingBinaries = errors.New("kubernetes test binaries missing")

// FindBinaries locates kube-apiserver and etcd. Explicit paths in b win;
// then $KUBE_APISERVER (set by `make test` and .ci/run from
// tools/kube-apiserver/ensure.sh) or the cache path ensure.sh builds into;
// then $ETCD, etcd on $PATH, or /usr/bin/etcd (Debian's etcd-server).
func FindBinaries(b Binaries) (Binaries, error) {
	var missing []string
	if b.KubeAPIServer == "" {
		b.KubeAPIServer = os.Getenv("KUBE_APISERVER")
	}
	if b.KubeAPIServer == "" {
		b.KubeAPIServer = cachedKubeAPIServer()
	}
	if !isExecutable(b.KubeAPIServer) {
		missing = append(missing, fmt.Sprintf("kube-apiserver (looked at %q): build it with `tools/kube-apiserver/ensure.sh` or `make kube-deps` (about 6 minutes once)", b.KubeAPIServer))
	}
	if b.Etcd == "" {
		b.Etcd = os.Getenv("ETCD")
	}
	if b.Etcd == "" {
		if p, err := exec.LookPath("etcd"); err == nil {
			b.Etcd = p
		} else {
			b.Etcd = "/usr/bin/etcd"
		}
	}
	if !isExecutable(b.Etcd) {
		missing = append(missing, fmt.Sprintf("etcd (looked at %q): install it with `sudo apt-get install etcd-server` or `make kube-deps` as root", b.Etcd))
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("%w: %s", ErrMissingBinaries, strings.Join(missing, "; "))
	}
	return b, nil
}

// requireBinaries returns the binaries, or ends the test: skipped outside
// CI so that a plain `go test ./...` works anywhere, failed in CI (CI=true)
// where a missing binary is a broken install step.
func requireBinaries(t testing.TB, b Binaries) Binaries {
	t.Helper()
	b, err := FindBinaries(b)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping Kubernetes test: %v", err)
	}
	return b
}

func isExecutable(p string) bool {
	if p == "" {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// cachedKubeAPIServer is where tools/kube-apiserver/ensure.sh puts the
// binary: ${XDG_CACHE_HOME:-$HOME/.cache}/wayfinder/kube-apiserver-VERSION,
// VERSION being the k8s.io/kubernetes requirement of that tools module.
func cachedKubeAPIServer() string {
	root, err := RepoRoot()
	if err != nil {
		return ""
	}
	version, err := kubernetesVersion(filepath.Join(root, "tools", "kube-apiserver", "go.mod"))
	if err != nil {
		return ""
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "wayfinder", "kube-apiserver-"+version)
}

// kubernetesVersion reads the k8s.io/kubernetes requirement from a go.mod,
// in its single-line or block form.
func kubernetesVersion(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 0 && fields[0] == "require" {
			fields = fields[1:]
		}
		if len(fields) >= 2 && fields[0] == "k8s.io/kubernetes" {
			return fields[1], nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no k8s.io/kubernetes requirement", gomod)
}

// RepoRoot finds the Wayfinder repository from the working directory (go
// test runs in the package's directory): the nearest parent whose go.mod
// declares module github.com/wayfinder-dev/wayfinder.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/wayfinder-dev/wayfinder\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the wayfinder repository")
		}
		dir = parent
	}
}
