package bootstrap

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/crdclient"
	kubegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/credentials"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	kuberegistry "github.com/wayfinder-dev/wayfinder/pilot/pkg/serviceregistry/kube"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kubeutil"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// KubeClients is what Kubernetes mode builds once and shares with every
// Kubernetes config source, including those plugged in through
// Options.ExtraKubeSources.
type KubeClients struct {
	RESTConfig *rest.Config
	Kube       kclient.Kube
	Istio      kclient.Istio
	GatewayAPI kclient.GatewayAPI
	// Reviews creates TokenReviews and SubjectAccessReviews, and nothing
	// else: its own connection, rate limiter (SecurityOptions.Reviews) and
	// deadline per request, so a flood of reviews, which clients drive,
	// never delays Lease renewal, status writes or informers behind it.
	Reviews kclient.Kube
	// Queue is the one event queue every source pushes its tasks to; the
	// server runs it.
	Queue *queue.Queue
	// Namespaces are --watch-namespaces; empty means all.
	Namespaces []string
	// Recorder records Kubernetes Events (component "wayfinder").
	Recorder   record.EventRecorder
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// KubeSource builds one more config source in Kubernetes mode. Its
// objects are merged with the Istio CRDs' into the store the push context
// reads, and its events reach the same handlers.
type KubeSource func(KubeClients) (model.ConfigStoreController, error)

// restConfig is the client config for Kubernetes mode: the kubeconfig
// file, or the in-cluster service account when none is given.
func restConfig(opts Options) (*rest.Config, error) {
	if opts.KubeRESTConfig != nil {
		return rest.CopyConfig(opts.KubeRESTConfig), nil
	}
	if opts.Kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --config-dir or --kubeconfig given and not running in a Kubernetes pod: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %q: %w", opts.Kubeconfig, err)
	}
	return cfg, nil
}

// newReviewClient is the client of TokenReviews and SubjectAccessReviews:
// cfg's server and credentials with a rate limiter, connection and
// request timeout of its own. It is built before cfg gets the transport
// wrapper that waits out API server outages (only lists and watches wait;
// a review should fail fast).
func newReviewClient(cfg *rest.Config, o ReviewClientOptions) (kclient.Kube, error) {
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst, rc.Timeout = o.QPS, o.Burst, o.Timeout
	rc.RateLimiter = nil
	rc.UserAgent = cfg.UserAgent + "-reviews"
	if rc.Dial == nil {
		// A dialer of its own keeps client-go from sharing the cached
		// transport, and so the connection, of the other clients.
		rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	cs, err := kclient.New(rc)
	if err != nil {
		return nil, fmt.Errorf("review client: %w", err)
	}
	return cs.Kube, nil
}

// kubeMode holds what Kubernetes mode runs besides the config store.
type kubeMode struct {
	clients     KubeClients
	registry    *kuberegistry.Controller
	broadcaster record.EventBroadcaster
	// secrets serves HTTPS certificates; ingress (nil when disabled)
	// translates Ingresses; status (nil without pod identity) writes their
	// status when this replica leads.
	secrets *ingress.Secrets
	// authz answers whether a gateway may have another namespace's Secret.
	authz   *credentials.Authorizer
	ingress *ingress.Controller
	status  *status.Writer
	// istioStatus (nil without pod identity) writes the status of the
	// Istio objects when this replica leads.
	istioStatus *status.IstioWriter
	// gatewayAPI is the Gateway API source, whose status the Istio status
	// writer also writes.
	gatewayAPI *kubegatewayapi.Controller
	// gatewayDeployer (nil when off) deploys the proxies of Gateways.
	gatewayDeployer *gatewaydeploy.Deployer
	// istioInformers are the Istio config informers, shared by the config
	// source and the status writer.
	istioInformers []*kclient.IstioFactory
	// pushSecret asks for a push when a certificate changes; set by
	// NewServer before anything runs.
	pushSecret func()
}

// newKubeMode builds clients, the Istio CRD controller, any extra
// sources and the service registry, all on one shared queue.
func newKubeMode(opts Options, reg prometheus.Registerer) (*kubeMode, []model.ConfigStoreController, error) {
	cfg, err := restConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cfg.UserAgent = "wayfinder-pilot-discovery"
	reviews, err := newReviewClient(cfg, opts.Security.Reviews)
	if err != nil {
		return nil, nil, err
	}
	// Informers wait out an API server outage instead of backing off for
	// up to a minute (see kubeutil.WaitForAPIServer).
	cfg.Wrap(kubeutil.WaitForAPIServer(kubeutil.ReconnectOptions{Logger: opts.Logger}))
	cs, err := kclient.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	namespaces := kubeutil.NormalizeNamespaces(opts.WatchNamespaces)
	if len(namespaces) == 1 && namespaces[0] == "" {
		namespaces = nil
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(kclient.EventSink{C: cs.Kube})
	m := &kubeMode{
		broadcaster: broadcaster,
		clients: KubeClients{
			RESTConfig: cfg, Kube: cs.Kube, Istio: cs.Istio, GatewayAPI: cs.GatewayAPI, Reviews: reviews,
			Queue:      queue.New(queue.Options{Logger: opts.Logger}),
			Namespaces: namespaces,
			Recorder:   broadcaster.NewRecorder(kclient.Scheme, corev1.EventSource{Component: "wayfinder"}),
			Registerer: reg,
			Logger:     opts.Logger,
		},
	}
	fail := func(err error) (*kubeMode, []model.ConfigStoreController, error) {
		broadcaster.Shutdown()
		return nil, nil, err
	}
	crds, err := crdclient.New(crdclient.Options{
		Client: cs.Istio, Namespaces: namespaces, Queue: m.clients.Queue, Logger: opts.Logger,
		Recorder: m.clients.Recorder, Registerer: reg,
	})
	if err != nil {
		return fail(err)
	}
	m.istioInformers = crds.InformerFactories()
	sources := []model.ConfigStoreController{crds}
	if err := m.addIngress(opts); err != nil {
		return fail(err)
	}
	if err := m.addSecretAuthorizer(opts); err != nil {
		return fail(err)
	}
	if m.ingress != nil {
		sources = append(sources, m.ingress)
	}
	if !opts.GatewayAPI.Disabled {
		gwapi, err := gatewayAPISource(m.clients, opts.DomainSuffix, !opts.GatewayDeploy.Disabled, crds, m.secrets)
		if err != nil {
			return fail(err)
		}
		m.gatewayAPI = gwapi
		sources = append(sources, gwapi)
	} else {
		opts.Logger.Info("the Gateway API is off (--gateway-api=false): its kinds are not watched")
	}
	for i, build := range opts.ExtraKubeSources {
		src, err := build(m.clients)
		if err != nil {
			return fail(fmt.Errorf("kubernetes config source %d: %w", i+1, err))
		}
		sources = append(sources, src)
	}
	m.registry, err = kuberegistry.New(kuberegistry.Options{
		Client: cs.Kube, Namespaces: namespaces, DomainSuffix: opts.DomainSuffix, Queue: m.clients.Queue, Logger: opts.Logger,
	})
	if err != nil {
		return fail(err)
	}
	return m, sources, nil
}
