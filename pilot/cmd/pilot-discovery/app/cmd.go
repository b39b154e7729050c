// Package app holds pilot-discovery's commands and flags. Flags are parsed
// here and only here, into bootstrap.Options.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
)

// NewRootCommand returns `pilot-discovery` with its `discovery` subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "pilot-discovery",
		Short:         "Wayfinder: an xDS control plane for Envoy gateways, speaking Istio's networking API",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newDiscoveryCommand())
	return root
}

func newDiscoveryCommand() *cobra.Command {
	var opts bootstrap.Options
	return discoveryCommand(&opts)
}

// discoveryCommand binds the flags to opts.
func discoveryCommand(opts *bootstrap.Options) *cobra.Command {
	var logLevel, logFormat string
	var memoryLimitRatio float64
	withholdRejected := true
	cmd := &cobra.Command{
		Use:   "discovery",
		Short: "Serve Envoy gateways over ADS",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(logLevel, logFormat)
			if err != nil {
				return err
			}
			opts.Logger = logger
			opts.KeepRejectedEnvoyFilterPatches = !withholdRejected
			// client-go logs through klog; send it to the same handler so
			// every line has one format.
			klog.SetSlogLogger(logger.With("component", "client-go"))
			if _, err := applyMemoryLimit(memoryLimitRatio, memlimit.FromCgroup, logger); err != nil {
				return usageError(cmd, err.Error())
			}
			if opts.ConfigDir != "" && opts.Kubeconfig != "" {
				return usageError(cmd, "--config-dir and --kubeconfig are both set: choose one config source, a folder of YAML (file mode) or a Kubernetes cluster")
			}
			applyModeDefaults(cmd, opts)
			s, err := bootstrap.NewServer(*opts)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// The first signal starts the drain; a second one ends the
			// process at once (Go's default once the handler is gone).
			go func() { <-ctx.Done(); stop() }()
			return s.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.GRPCAddr, "grpc-addr", "127.0.0.1:15010", "address of the plaintext ADS gRPC server; file mode only unless given explicitly (Kubernetes mode serves no plaintext ADS by default)")
	f.StringVar(&opts.HTTPAddr, "http-addr", "127.0.0.1:15014", "address of the debug, readiness and metrics HTTP server (Kubernetes mode default :15014, debug paths need a token)")
	f.StringVar(&opts.Security.SecureGRPCAddr, "secure-grpc-addr", ":15012", "address of the TLS ADS gRPC server for authenticated clients; empty turns it off")
	f.StringVar(&opts.Security.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM) of the secure ADS port, reread when it changes; without it Kubernetes mode keeps a self-signed CA in Secret wayfinder-ca of --pod-namespace")
	f.StringVar(&opts.Security.TLSKeyFile, "tls-key-file", "", "private key (PEM) of --tls-cert-file")
	f.StringSliceVar(&opts.Security.TLSSANs, "tls-san", nil, "further DNS names (or IP addresses) of the self-signed serving certificate")
	f.StringVar(&opts.Security.ClientCAFile, "client-ca-file", "", "CA bundle (PEM) verifying client certificates on the secure port; identity from their spiffe://TRUST_DOMAIN/ns/NS/sa/SA URI SAN")
	f.StringSliceVar(&opts.Security.TokenAudiences, "token-audiences", bootstrap.DefaultTokenAudiences, "audiences a ServiceAccount token on the secure port must be for (TokenReview)")
	f.StringSliceVar(&opts.Security.DebugAdminNamespaces, "debug-admin-namespaces", nil, "namespaces whose ServiceAccount tokens may read every debug endpoint (default: --pod-namespace only)")
	f.StringVar(&opts.ConfigDir, "config-dir", "", "folder of Istio and Gateway API YAML to serve (file mode); without it config comes from Kubernetes")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to read config, Services and EndpointSlices from (Kubernetes mode); empty with no --config-dir means the in-cluster service account")
	f.StringSliceVar(&opts.WatchNamespaces, "watch-namespaces", nil, "comma-separated namespaces Kubernetes mode watches; empty means all")
	f.StringVar(&opts.DomainSuffix, "domain-suffix", model.DefaultDomainSuffix, "cluster domain: Kubernetes Service hostnames are NAME.NAMESPACE.svc.SUFFIX, and short hosts in VirtualServices, DestinationRules, Ingresses and Gateway API routes are completed with it")
	f.StringVar(&opts.RootNamespace, "root-namespace", "", "namespace whose DestinationRules apply to every namespace's services, after the proxy's and the service's own; overrides the mesh config's rootNamespace (default: the mesh config's, istio-system unless it says otherwise)")
	f.StringVar(&opts.MeshConfigFile, "mesh-config", "", "istiod's mesh config file (MeshConfig YAML, as istiod's --meshConfig), read at start and whenever its content changes; a refused update keeps the last good one. Without it Kubernetes mode watches ConfigMap istio (key mesh) in --pod-namespace, as istiod does; file mode uses istiod's defaults")
	f.DurationVar(&opts.RescanInterval, "config-rescan-interval", 30*time.Second, "how often file mode rescans --config-dir as a backstop to file-system events")
	f.DurationVar(&opts.ConfigSettle, "config-settle", 100*time.Millisecond, "how long a changed or removed file in --config-dir must stay as it is before it is taken in; until then it keeps serving what it served")
	f.DurationVar(&opts.ConfigEmptyGrace, "config-empty-grace", time.Second, "how long a file in --config-dir must stay empty before the objects it defined are removed (at least --config-settle)")
	f.StringVar(&opts.Ingress.Class, "ingress-class", "", "legacy kubernetes.io/ingress.class value to handle, besides IngressClasses naming controller wayfinder.io/ingress-controller")
	f.StringVar(&opts.Ingress.Service, "ingress-service", "istio-system/istio-ingressgateway", "gateway Service (namespace/name) whose addresses are written to Ingress status")
	f.BoolVar(&opts.Ingress.Disabled, "disable-ingress", false, "do not translate Kubernetes Ingresses or write their status")
	f.Var(negatedBool{&opts.GatewayAPI.Disabled}, "gateway-api", "serve the Kubernetes Gateway API (GatewayClass, Gateway, ListenerSet, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, ReferenceGrant, BackendTLSPolicy) in both modes; false: no Gateway API informers and no conversion")
	f.Lookup("gateway-api").NoOptDefVal = "true"
	f.StringVar(&opts.PodName, "pod-name", "", "this replica's pod name, for the Lease electing the Ingress status writer (downward API)")
	f.StringVar(&opts.PodNamespace, "pod-namespace", "", "this replica's namespace, where that Lease lives (downward API)")
	f.DurationVar(&opts.Debounce.LeadingDelay, "debounce-first", 10*time.Millisecond, "delay before pushing a lone change after a quiet spell; changes in a burst wait --debounce-after (0: always wait --debounce-after)")
	f.DurationVar(&opts.Debounce.QuietPeriod, "debounce-after", 100*time.Millisecond, "quiet period after a config change before pushing")
	f.DurationVar(&opts.Debounce.MaxDelay, "debounce-max", 10*time.Second, "longest a config change waits for the quiet period")
	eds := xds.DefaultEndpointDebounce()
	f.DurationVar(&opts.EndpointDebounce.QuietPeriod, "eds-debounce-after", eds.QuietPeriod, "quiet period after an endpoint-only change (EndpointSlices) before pushing it")
	f.DurationVar(&opts.EndpointDebounce.MaxDelay, "eds-debounce-max", eds.MaxDelay, "longest an endpoint-only change waits for its quiet period: under steady endpoint churn, how often endpoints are pushed")
	f.BoolVar(&withholdRejected, "withhold-rejected-envoyfilter-patches", true, "when a gateway rejects (NACKs) a listener, route configuration or cluster that EnvoyFilter patches changed, translate it again without those patches for every gateway, so gateways converge on the unpatched resource; false: keep sending the patched resource")
	f.BoolVar(&opts.WarmGateways, "warm-gateways", true, "before reporting ready (and whenever a full push finds no gateway connected), translate the configuration each Gateway's selector picks out, so the first gateways to connect find it done; false: translate on their connection")
	f.DurationVar(&opts.DrainDuration, "drain-duration", 20*time.Second, "on SIGTERM, refuse new ADS streams and close the open ones spread evenly over this, so that gateways reconnect to other replicas gradually; fits terminationGracePeriodSeconds with --shutdown-grace")
	f.DurationVar(&opts.ShutdownGrace, "shutdown-grace", 5*time.Second, "how long shutdown waits for streams to close after the drain")
	addLimitFlags(cmd, &opts.Limits)
	addAuthFlags(cmd, &opts.Security)
	addGatewayDeployFlags(cmd, &opts.GatewayDeploy)
	f.Float64Var(&memoryLimitRatio, "memory-limit-ratio", defaultMemoryLimitRatio, "soft memory limit of the Go runtime, as a fraction of the container's memory limit (cgroup), so the collector works harder before the pod is OOM-killed; 0: none; GOMEMLIMIT, when set, wins")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
}

// applyModeDefaults adjusts defaults that depend on the mode: Kubernetes
// mode serves no plaintext ADS unless --grpc-addr was given, and its
// debug port listens on every address (its debug paths need a token).
func applyModeDefaults(cmd *cobra.Command, opts *bootstrap.Options) {
	if opts.ConfigDir != "" {
		return
	}
	f := cmd.Flags()
	if !f.Changed("grpc-addr") {
		opts.GRPCAddr = ""
	}
	if !f.Changed("http-addr") {
		opts.HTTPAddr = ":15014"
	}
}

func usageError(cmd *cobra.Command, msg string) error {
	fmt.Fprintln(cmd.ErrOrStderr(), "error:", msg)
	fmt.Fprintln(cmd.ErrOrStderr(), cmd.UsageString())
	return fmt.Errorf("%s", msg)
}

func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	hopts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, hopts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// negatedBool is a boolean flag stored negated: --gateway-api (default
// true) sets GatewayAPIOptions.Disabled, whose zero value is on.
type negatedBool struct{ p *bool }

func (b negatedBool) String() string {
	if b.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.p)
}

func (b negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = !v
	return nil
}

func (b negatedBool) Type() string     { return "bool" }
func (b negatedBool) IsBoolFlag() bool { return true }
