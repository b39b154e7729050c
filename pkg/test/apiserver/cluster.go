// Package apiserver runs a real Kubernetes API server for tests: etcd and
// kube-apiserver on loopback, random free ports, a temporary data directory,
// token authentication and RBAC, and Istio's networking CRDs and the Gateway
// API CRDs (manifests/crds/gateway-api) applied.
// There are no kubelets or controllers: tests create the objects (Services,
// EndpointSlices, Pods, Istio config) a control plane reads.
//
// kube-apiserver is built from source by tools/kube-apiserver/ensure.sh
// (`make kube-deps`) and etcd comes from Debian's etcd-server. When either
// is missing, tests are skipped with the command to run, or fail when
// CI=true.
//
// A cluster takes several seconds to start, so a test package usually
// shares one (see Shared) and each test works in its own namespace.
package apiserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure a Cluster. The zero value finds the binaries as
// FindBinaries says.
type Options struct {
	Binaries Binaries
	// StartTimeout bounds each start of etcd and of kube-apiserver,
	// including applying the CRDs. Default 2 minutes: a loaded 2-core
	// machine can take tens of seconds.
	StartTimeout time.Duration
	// SkipGatewayAPICRDs leaves the Gateway API CRDs out, for tests that
	// install them later (ApplyGatewayAPICRDs).
	SkipGatewayAPICRDs bool
}

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig for AdminUser.
	Kubeconfig string
	// Dir holds data, logs (etcd.log, kube-apiserver.log) and kubeconfigs.
	Dir string

	opts      Options
	etcd      *etcd
	api       *apiServer
	restCfg   *rest.Config
	restrKube string

	mu      sync.Mutex // guards clients and stopped
	clients *kubernetes.Clientset
	stopped bool
}

// Start starts a cluster for one test and stops it when the test ends. It
// skips the test (or fails it when CI=true) when the binaries are missing.
func Start(t testing.TB, opts ...Options) *Cluster {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Binaries = requireBinaries(t, o.Binaries)
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// New starts a cluster without a test, for TestMain; the caller must Stop
// it. It returns an error wrapping ErrMissingBinaries when a binary is not
// installed.
func New(o Options) (*Cluster, error) {
	bins, err := FindBinaries(o.Binaries)
	if err != nil {
		return nil, err
	}
	o.Binaries = bins
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	dir, err := os.MkdirTemp("", "wayfinder-kube-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, opts: o}
	if err := c.start(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	var err error
	if c.etcd, err = startEtcd(ctx, c.opts.Binaries.Etcd, c.Dir); err != nil {
		return err
	}
	if c.api, err = prepareAPIServer(c.opts.Binaries.KubeAPIServer, c.Dir, c.etcd.clientURL); err != nil {
		return err
	}
	if err := c.api.start(ctx); err != nil {
		return err
	}
	ca, err := c.api.caData()
	if err != nil {
		return err
	}
	c.restCfg = &rest.Config{
		Host:            c.api.url(),
		BearerToken:     c.api.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		// Tests create objects in bursts; client-side throttling would
		// only slow them down.
		QPS:   200,
		Burst: 400,
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.api.url(), ca, AdminUser, c.api.adminToken); err != nil {
		return err
	}
	c.restrKube = filepath.Join(c.Dir, "restricted.kubeconfig")
	if err := writeKubeconfig(c.restrKube, c.api.url(), ca, RestrictedUser, c.api.restrictedToken); err != nil {
		return err
	}
	if err := applyCRDs(ctx, c.RESTConfig(), c.opts.SkipGatewayAPICRDs); err != nil {
		return fmt.Errorf("applying Istio and Gateway API CRDs: %w", err)
	}
	return setupRestrictedRoles(ctx, c.Clientset())
}

// RESTConfig returns a new client config for AdminUser.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restCfg) }

// Clientset returns a shared client-go clientset for AdminUser.
func (c *Cluster) Clientset() *kubernetes.Clientset {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = kubernetes.NewForConfigOrDie(c.RESTConfig())
	}
	return c.clients
}

// RestrictedKubeconfig is the path of a kubeconfig for RestrictedUser, who
// may read only in the namespaces AllowRestricted named (and list
// IngressClasses, which are cluster-scoped).
func (c *Cluster) RestrictedKubeconfig() string { return c.restrKube }

// RestrictedRESTConfig returns a client config for RestrictedUser.
func (c *Cluster) RestrictedRESTConfig() *rest.Config {
	cfg := c.RESTConfig()
	cfg.BearerToken = c.api.restrictedToken
	return cfg
}

// URL is the API server's address, https://127.0.0.1:PORT.
func (c *Cluster) URL() string { return c.api.url() }

// RestartAPIServer stops kube-apiserver and starts it again on the same port
// with the same etcd, for tests of watches that must resume. It returns once
// the new server is ready.
func (c *Cluster) RestartAPIServer(t testing.TB) {
	t.Helper()
	c.api.stop()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	if err := c.api.start(ctx); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
}

// StopAPIServer stops kube-apiserver only; StartAPIServer starts it again
// on the same port. Between the two, clients see connection errors, as in
// an API server outage.
func (c *Cluster) StopAPIServer() { c.api.stop() }

// StartAPIServer starts kube-apiserver again after StopAPIServer.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	if err := c.api.start(ctx); err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
}

// Stop ends kube-apiserver and etcd and removes Dir. It is safe to call
// more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	c.api.stop()
	c.etcd.stop()
	insecureHTTP.CloseIdleConnections()
	os.RemoveAll(c.Dir)
}

// Namespace creates a namespace named prefix plus a random suffix, so tests
// sharing a cluster never meet. Namespaces are not deleted afterwards: with
// no namespace controller running, deletion would never finish anyway.
func (c *Cluster) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns, err := c.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s-*: %v", prefix, err)
	}
	return ns.Name
}

func writeKubeconfig(path, server string, ca []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["wayfinder-test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["wayfinder-test"] = &clientcmdapi.Context{Cluster: "wayfinder-test", AuthInfo: user}
	cfg.CurrentContext = "wayfinder-test"
	return clientcmd.WriteToFile(*cfg, path)
}

// Shared is one cluster for a whole test package, started by the first test
// that asks for it (so `go test -run` on other tests starts nothing) and
// stopped by Run after every test:
//
//	var cluster apiserver.Shared
//	func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }
//	func TestX(t *testing.T) { c := cluster.Get(t); ns := c.Namespace(t, "x"); ... }
type Shared struct {
	Options Options

	once sync.Once
	c    *Cluster
	err  error
}

// Get returns the shared cluster, starting it on first use. It skips or
// fails t as Start does when binaries are missing, and fails every test if
// the cluster could not start.
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	bins := requireBinaries(t, s.Options.Binaries)
	s.once.Do(func() {
		o := s.Options
		o.Binaries = bins
		s.c, s.err = New(o)
	})
	if s.err != nil {
		t.Fatalf("starting the shared test cluster: %v", s.err)
	}
	return s.c
}

// Run runs the tests and then stops the cluster, returning m.Run's code.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	s.Stop()
	return code
}

// Stop stops the cluster if one was started.
func (s *Shared) Stop() {
	if s.c != nil {
		s.c.Stop()
	}
}
