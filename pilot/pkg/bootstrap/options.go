// Package bootstrap assembles pilot-discovery: a config source, the
// discovery (ADS) server, and the gRPC and HTTP listeners, and runs them
// until the context ends.
package bootstrap

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"k8s.io/client-go/rest"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// Options configure a Server. Flags are parsed into this struct by the
// command; nothing below reads the environment.
type Options struct {
	// GRPCAddr is where plaintext ADS is served (Istio's :15010). Empty
	// means 127.0.0.1:15010 in file mode and no plaintext port in
	// Kubernetes mode.
	GRPCAddr string
	// HTTPAddr serves debug endpoints, readiness and metrics (Istio's
	// :15014). Empty means 127.0.0.1:15014 in file mode, :15014 in
	// Kubernetes mode (where debug endpoints need a token).
	HTTPAddr string
	// Security configures the TLS ADS port and authentication.
	Security SecurityOptions
	// ConfigDir is the folder of Istio YAML read in file mode. Exactly one
	// config source is used: ConfigDir (file mode), or Kubernetes.
	ConfigDir string
	// Kubeconfig is the kubeconfig file of Kubernetes mode. Kubernetes mode
	// is used when ConfigDir is empty; an empty Kubeconfig then means the
	// in-cluster service account.
	Kubeconfig string
	// KubeRESTConfig, when set, is used instead of Kubeconfig (embedding,
	// tests).
	KubeRESTConfig *rest.Config
	// WatchNamespaces limits what Kubernetes mode watches; empty means all.
	WatchNamespaces []string
	// DomainSuffix ends Kubernetes Service hostnames; default cluster.local.
	DomainSuffix string
	// RootNamespace holds the DestinationRules that apply to every
	// namespace's services after the proxy's and the service's own. Empty
	// means the mesh config's rootNamespace (istiod's default
	// istio-system); set, it wins over the mesh config.
	RootNamespace string
	// MeshConfigFile is istiod's mesh config (MeshConfig YAML), read at
	// start and watched (both modes). Empty: in Kubernetes mode the istio
	// ConfigMap of PodNamespace, key mesh, is watched, as istiod does;
	// in file mode istiod's defaults.
	MeshConfigFile string
	// MeshConfigDebounce is how long MeshConfigFile's directory must be
	// quiet after a change before the file is read again (default 100ms).
	// The debounce runs on Debounce.Clock.
	MeshConfigDebounce time.Duration
	// ExtraKubeSources are further config sources for Kubernetes mode,
	// merged with the Istio CRDs and Ingresses into one store.
	ExtraKubeSources []KubeSource
	// GatewayDeploy configures the automated deployment of the proxies of
	// Gateway API Gateways (Kubernetes mode).
	GatewayDeploy gatewaydeploy.Options
	// Ingress configures Kubernetes Ingress support.
	Ingress IngressOptions
	// GatewayAPI configures the Kubernetes Gateway API (both modes).
	GatewayAPI GatewayAPIOptions
	// PodName and PodNamespace identify this replica (from the downward
	// API) for the Lease that elects the one writing Ingress status.
	PodName      string
	PodNamespace string
	// RescanInterval is how often file mode rescans ConfigDir in case a
	// file-system event was missed.
	RescanInterval time.Duration
	// ConfigSettle is how long a changed or removed file in ConfigDir must
	// stay as it is before it is taken in (file.Options.Settle).
	ConfigSettle time.Duration
	// ConfigEmptyGrace is how long a file must stay empty before its
	// objects are removed (file.Options.EmptyGrace).
	ConfigEmptyGrace time.Duration
	// Debounce merges config changes that arrive close together.
	Debounce debounce.Options
	// EndpointDebounce merges endpoint-only changes on their own
	// (xds.Options.EndpointDebounce); zero values take its defaults.
	EndpointDebounce debounce.Options
	// WarmGateways translates each Gateway selector's configuration before
	// the server reports ready (xds.Options.WarmGateways).
	WarmGateways bool
	// KeepRejectedEnvoyFilterPatches keeps sending EnvoyFilter patches a
	// gateway rejected (xds.Options.KeepRejectedPatches); by default they
	// are withheld from the rejected resources.
	KeepRejectedEnvoyFilterPatches bool
	// Limits bound what clients can cost (gRPC and per ADS stream).
	Limits Limits
	// DrainDuration is how long a clean shutdown (SIGTERM) takes to close
	// the open ADS streams, spread evenly over it, after refusing new ones
	// (see drain.go). Zero closes them all at once (embedding, tests); the
	// command's --drain-duration defaults to 20s.
	DrainDuration time.Duration
	// ShutdownGrace bounds how long shutdown waits for streams to close
	// after the drain.
	ShutdownGrace time.Duration
	Logger        *slog.Logger
	// SecretReview tunes the cache of SubjectAccessReviews deciding which
	// gateway may have another namespace's Secret; zero values take
	// credentials.Options' defaults (5m allowed, 1m denied, 10s retry).
	SecretReview SecretReviewOptions
	// GRPCServerOptions are added to the plaintext ADS gRPC server's own,
	// for embedding; the secure port keeps its authenticating interceptor.
	GRPCServerOptions []grpc.ServerOption
}

// validate rejects option combinations that cannot work.
func (o *Options) validate() error {
	if o.ConfigDir != "" && (o.Kubeconfig != "" || o.KubeRESTConfig != nil) {
		return errors.New("--config-dir and --kubeconfig are both set: Wayfinder reads one config source, a folder (file mode) or a Kubernetes cluster; drop one")
	}
	if o.DrainDuration < 0 {
		return fmt.Errorf("--drain-duration %s: must not be negative", o.DrainDuration)
	}
	if err := o.Limits.validate(); err != nil {
		return err
	}
	if o.ConfigDir != "" && len(o.WatchNamespaces) > 0 {
		return errors.New("--watch-namespaces applies to Kubernetes mode only; it cannot be used with --config-dir")
	}
	if err := o.Security.validate(o.kubernetesMode()); err != nil {
		return err
	}
	return nil
}

// kubernetesMode reports whether config comes from Kubernetes.
func (o *Options) kubernetesMode() bool { return o.ConfigDir == "" }

func (o *Options) applyDefaults() {
	if o.GRPCAddr == "" && !o.kubernetesMode() {
		o.GRPCAddr = "127.0.0.1:15010"
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = "127.0.0.1:15014"
		if o.kubernetesMode() {
			o.HTTPAddr = ":15014"
		}
	}
	o.Security.applyDefaults(o.PodNamespace)
	if o.RescanInterval == 0 {
		o.RescanInterval = 30 * time.Second
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 5 * time.Second
	}
	if o.Ingress.Service == "" {
		o.Ingress.Service = "istio-system/istio-ingressgateway"
	}
	if o.DomainSuffix == "" {
		o.DomainSuffix = model.DefaultDomainSuffix
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Limits.applyDefaults()
}

// SecretReviewOptions are the timings of the SubjectAccessReview cache
// (credentials.Options): how long an allowed and a denied answer are kept,
// how often expired answers in use are checked again, and how long an
// allowed answer stands while those checks fail (default 2 x AllowedTTL).
type SecretReviewOptions struct {
	AllowedTTL, DeniedTTL, Refresh, MaxStale time.Duration
}
