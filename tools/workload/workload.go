// Package workload generates the benchmark scenario of issue 6 as Istio
// YAML for file mode: one Gateway istio-system/ingressgateway selecting
// istio=ingressgateway on port 80 for every host, N ServiceEntries
// svc-i.default.svc.cluster.local (MESH_INTERNAL, STATIC, port 8080 http,
// E endpoints each) and N VirtualServices app-i.example.com bound to that
// gateway, each with a canary route and a default route. It also writes the
// update: one VirtualService whose first route's prefix changes.
//
// Each VirtualService is a file of its own, so the update rewrites one
// small file and file mode re-parses only that one; the ServiceEntries,
// which never change, share one file.
//
// Optionally (Options.AuthorizationPolicies, RequestAuthentications) it
// also writes gateway policies into SecurityFile: RequestAuthentications
// with inline JWKS and a mix of ALLOW, DENY and AUDIT
// AuthorizationPolicies, all selecting the ingress gateway (see
// security.go), to measure what they cost a push.
//
// WriteKube writes the Kubernetes form into an API server: Services with
// EndpointSlices instead of ServiceEntries, plus DestinationRules (see
// kube.go).
package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Defaults of the scenario.
const (
	DefaultEndpoints = 3
	// BasePrefix is the first route's URI prefix before the update.
	BasePrefix = "/api/v2"
	// UpdatePrefix is the prefix the update writes.
	UpdatePrefix = "/api/v3"
	// GatewayFile and ServiceEntryFile are the names of the fixed files.
	GatewayFile      = "gateway.yaml"
	ServiceEntryFile = "serviceentries.yaml"
)

// Options size the scenario.
type Options struct {
	// Services is N, the number of ServiceEntries and VirtualServices.
	Services int
	// Endpoints is E, endpoints per ServiceEntry; zero means 3.
	Endpoints int
	// AuthorizationPolicies and RequestAuthentications are how many of
	// each to write into SecurityFile (none, and no file, when both are
	// zero).
	AuthorizationPolicies  int
	RequestAuthentications int
	// EnvoyFilters is how many EnvoyFilters to write into EnvoyFilterFile
	// (none, and no file, when zero).
	EnvoyFilters int
}

func (o Options) validate() error {
	if o.Services < 1 {
		return fmt.Errorf("workload: Services must be at least 1, got %d", o.Services)
	}
	if o.Endpoints < 0 || o.Services*max(o.Endpoints, 1) > 1<<22 {
		return fmt.Errorf("workload: Endpoints %d out of range for %d services", o.Endpoints, o.Services)
	}
	if o.EnvoyFilters < 0 || o.EnvoyFilters > 1<<16 {
		return fmt.Errorf("workload: EnvoyFilters %d out of range (0 to 65536)", o.EnvoyFilters)
	}
	return o.validateSecurity()
}

// ServiceHost is the host of ServiceEntry i.
func ServiceHost(i int) string { return fmt.Sprintf("svc-%d.default.svc.cluster.local", i) }

// AppHost is the host of VirtualService i.
func AppHost(i int) string { return fmt.Sprintf("app-%d.example.com", i) }

// VirtualServiceFile is the file that holds VirtualService i.
func VirtualServiceFile(i int) string { return fmt.Sprintf("virtualservice-app-%d.yaml", i) }

// EndpointAddress is the address of endpoint j of service i when each has
// e endpoints: 127.x.y.z beyond 127.0.0.0/16, in loopback space so it is
// never routed anywhere, and never dialled, since it is only config.
func EndpointAddress(i, j, e int) string {
	idx := i*e + j
	return fmt.Sprintf("127.%d.%d.%d", 1+idx>>16, (idx>>8)&255, idx&255)
}

// Write writes the scenario into dir (created if missing). Existing files
// of the same names are replaced; other files are left alone.
func Write(dir string, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Endpoints == 0 {
		o.Endpoints = DefaultEndpoints
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if err := writeFile(dir, GatewayFile, Gateway()); err != nil {
		return err
	}
	var se bytes.Buffer
	for i := range o.Services {
		if i > 0 {
			se.WriteString("---\n")
		}
		se.Write(ServiceEntry(i, o.Endpoints))
	}
	if err := writeFile(dir, ServiceEntryFile, se.Bytes()); err != nil {
		return err
	}
	for i := range o.Services {
		if err := writeFile(dir, VirtualServiceFile(i), VirtualService(i, o.Services, BasePrefix)); err != nil {
			return err
		}
	}
	if err := writeEnvoyFilters(dir, o); err != nil {
		return err
	}
	return writeSecurity(dir, o)
}

// WriteUpdate rewrites VirtualService i of an n-service scenario in dir
// with prefix as its first route's prefix. It writes a temporary file and
// renames it over the old one, as editors do, so the control plane never
// reads half a file.
func WriteUpdate(dir string, i, n int, prefix string) error {
	if i < 0 || i >= n {
		return fmt.Errorf("workload: VirtualService %d out of range for %d services", i, n)
	}
	if prefix == "" || prefix[0] != '/' {
		return fmt.Errorf("workload: prefix %q must start with /", prefix)
	}
	return writeFile(dir, VirtualServiceFile(i), VirtualService(i, n, prefix))
}

func writeFile(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("workload: writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("workload: %w", err)
	}
	return nil
}

// Gateway is the ingress Gateway.
func Gateway() []byte {
	return []byte(`apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: ingressgateway
  namespace: istio-system
spec:
  selector:
    istio: ingressgateway
  servers:
  - port:
      number: 80
      name: http
      protocol: HTTP
    hosts:
    - "*/*"
`)
}

// ServiceEntry is ServiceEntry i with e endpoints.
func ServiceEntry(i, e int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: svc-%d
  namespace: default
spec:
  hosts:
  - %s
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - number: 8080
    name: http
    protocol: HTTP
  endpoints:
`, i, ServiceHost(i))
	for j := range e {
		fmt.Fprintf(&b, "  - address: %s\n", EndpointAddress(i, j, e))
	}
	return b.Bytes()
}

// VirtualService is VirtualService i of an n-service scenario: a first
// route matching the URI prefix or header x-canary: true, split 90/10
// between svc-i and svc-(i+1) (wrapping to svc-0) with a 5s timeout and 2
// retries of 2s, and a second route sending / to svc-i.
func VirtualService(i, n int, prefix string) []byte {
	return fmt.Appendf(nil, `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: app-%d
  namespace: default
spec:
  hosts:
  - %s
  gateways:
  - istio-system/ingressgateway
  http:
  - match:
    - uri:
        prefix: %s
    - headers:
        x-canary:
          exact: "true"
    route:
    - destination:
        host: %s
        port:
          number: 8080
      weight: 90
    - destination:
        host: %s
        port:
          number: 8080
      weight: 10
    timeout: 5s
    retries:
      attempts: 2
      perTryTimeout: 2s
  - match:
    - uri:
        prefix: /
    route:
    - destination:
        host: %s
        port:
          number: 8080
`, i, AppHost(i), prefix, ServiceHost(i), ServiceHost((i+1)%n), ServiceHost(i))
}
