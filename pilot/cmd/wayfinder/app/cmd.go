// Package app holds the wayfinder command's flags and subcommands. Flags
// are parsed here and only here; the work is done by pilot/pkg/cli.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/cli"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// NewRootCommand returns `wayfinder` with its subcommands, writing to out.
func NewRootCommand(out io.Writer) *cobra.Command {
	var copts cli.ClientOptions
	root := &cobra.Command{
		Use:           "wayfinder",
		Short:         "Inspect a Wayfinder control plane and analyze Istio networking config",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	pf := root.PersistentFlags()
	pf.StringSliceVar(&copts.Addrs, "debug-addr", []string{"127.0.0.1:15014"},
		"debug address (host:port or URL) of the control plane; repeat or comma-separate for several replicas")
	pf.StringVar(&copts.TokenFile, "token-file", "", "file holding a bearer token for the debug endpoints (required in Kubernetes mode)")
	pf.DurationVar(&copts.Timeout, "timeout", 30*time.Second, "bound on each request to the control plane")
	root.AddCommand(newProxyStatus(&copts), newProxyConfig(&copts), newAnalyze(), newVersion(&copts))
	return root
}

func clients(copts *cli.ClientOptions) ([]*cli.Client, error) { return cli.NewClients(*copts) }

func outputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "", "output format: json or yaml (default a table)")
}

func newProxyStatus(copts *cli.ClientOptions) *cobra.Command {
	var opts cli.StatusOptions
	cmd := &cobra.Command{
		Use:   "proxy-status",
		Short: "Every connected proxy, per xDS type SYNCED, STALE or NACKED with its version, and the replica serving it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := clients(copts)
			if err != nil {
				return err
			}
			st, err := cli.CollectStatus(cmd.Context(), cs)
			if err != nil {
				return err
			}
			return cli.WriteStatus(cmd.OutOrStdout(), st, opts)
		},
	}
	outputFlag(cmd, &opts.Output)
	return cmd
}

// configTypeAliases accept the singular too, as istioctl does.
var configTypeAliases = map[string]string{
	"listener": "listeners", "route": "routes", "cluster": "clusters", "endpoint": "endpoints", "secret": "secrets",
}

func newProxyConfig(copts *cli.ClientOptions) *cobra.Command {
	var opts cli.ConfigOptions
	cmd := &cobra.Command{
		Use:   "proxy-config " + strings.Join(slices.Concat(cli.ConfigTypes, []string{cli.TelemetryType}), "|") + " PROXY",
		Short: "The config one proxy is served, as a table or raw (-o json|yaml; secrets show names and versions only)",
		Long: "PROXY is a node id, POD.NAMESPACE or a pod name (see proxy-status). Tables summarise; " +
			"-o json or -o yaml print that part of the proxy's config dump as Envoy's admin API shows it. " +
			"telemetry shows the access logging and tracing decision in force: which Telemetry objects " +
			"apply, the providers, and what was left out.",
		Args:      cobra.ExactArgs(2),
		ValidArgs: slices.Concat(cli.ConfigTypes, []string{cli.TelemetryType}),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Type, opts.Proxy = args[0], args[1]
			if t, ok := configTypeAliases[opts.Type]; ok {
				opts.Type = t
			}
			if !slices.Contains(cli.ConfigTypes, opts.Type) && opts.Type != cli.TelemetryType {
				return fmt.Errorf("unknown config type %q: want one of %s", args[0], strings.Join(slices.Concat(cli.ConfigTypes, []string{cli.TelemetryType}), ", "))
			}
			cs, err := clients(copts)
			if err != nil {
				return err
			}
			c, id, err := cli.ResolveProxy(cmd.Context(), cs, opts.Proxy)
			if err != nil {
				return err
			}
			if opts.Type == cli.TelemetryType {
				t, err := cli.FetchTelemetry(cmd.Context(), c, id)
				if err != nil {
					return err
				}
				return cli.WriteTelemetry(cmd.OutOrStdout(), t, opts.Output)
			}
			dump, err := cli.FetchConfigDump(cmd.Context(), c, id, opts.WithoutEnvoyFilters)
			if err != nil {
				return err
			}
			return cli.WriteConfig(cmd.OutOrStdout(), dump, opts)
		},
	}
	outputFlag(cmd, &opts.Output)
	cmd.Flags().BoolVar(&opts.WithoutEnvoyFilters, "without-envoyfilters", false, "show the config as translated, before the EnvoyFilters that apply to the proxy patch it (the server translates it on demand)")
	return cmd
}

func newAnalyze() *cobra.Command {
	var (
		output, kubeconfig string
		meshConfig         string
		namespaces         []string
		timeout            time.Duration
		aopts              analysis.Options
	)
	cmd := &cobra.Command{
		Use:   "analyze [DIR|FILE...]",
		Short: "Report every problem the control plane would find in folders of Istio config, or in a cluster (--kubeconfig)",
		Long: "Runs validation and translation as the server does, without a server: errors (objects or parts not " +
			"served), and warnings (routes that never match, hosts bound twice, destinations, subsets and Gateways " +
			"that do not exist). Each finding names file and line, or the object. Exits 1 when there are errors.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == (kubeconfig == "") {
				return fmt.Errorf("give folders or files to analyze, or --kubeconfig for a cluster (not both)")
			}
			if meshConfig != "" {
				data, err := os.ReadFile(meshConfig)
				if err != nil {
					return fmt.Errorf("--mesh-config: %w", err)
				}
				if aopts.Mesh, err = mesh.Parse(mesh.FileSource(meshConfig), data); err != nil {
					return err
				}
			}
			var findings []analysis.Finding
			if kubeconfig != "" {
				cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
				if err != nil {
					return fmt.Errorf("--kubeconfig %q: %w", kubeconfig, err)
				}
				configs, errs, reg, err := analysis.LoadCluster(cmd.Context(), analysis.ClusterOptions{
					RESTConfig: cfg, Namespaces: namespaces, DomainSuffix: aopts.DomainSuffix, Timeout: timeout,
				})
				if err != nil {
					return err
				}
				aopts.Registries = append(aopts.Registries, reg)
				findings = analysis.Findings(analysis.Analyze(configs, errs, aopts), nil)
			} else {
				l, err := analysis.LoadAll(args)
				if err != nil {
					return err
				}
				aopts.GatewayAPI = l.GatewayAPI
				findings = analysis.Findings(analysis.Analyze(l.Configs, l.Errors, aopts), l.Contents)
			}
			return cli.WriteFindings(cmd.OutOrStdout(), findings, output)
		},
	}
	outputFlag(cmd, &output)
	f := cmd.Flags()
	f.BoolVar(&aopts.Proxyless, "proxyless", false, "also report what proxyless gRPC clients would not be sent")
	f.StringVar(&kubeconfig, "kubeconfig", "", "analyze the Istio config and Services of this cluster instead of files")
	f.StringSliceVar(&namespaces, "namespaces", nil, "with --kubeconfig: comma-separated namespaces to read (default all)")
	f.StringVar(&aopts.DomainSuffix, "domain-suffix", model.DefaultDomainSuffix, "cluster domain, as the server's --domain-suffix: short hosts complete to NAME.NAMESPACE.svc.SUFFIX (and, with --kubeconfig, Service hostnames end with it)")
	f.DurationVar(&timeout, "list-timeout", time.Minute, "with --kubeconfig: bound on reading the cluster")
	f.StringVar(&meshConfig, "mesh-config", "", "istiod MeshConfig YAML, as the server's --mesh-config: Telemetry and CUSTOM AuthorizationPolicy providers are checked against its extensionProviders, AuthorizationPolicy ipBlocks against its defaultConfig.gatewayTopology (default: istiod's defaults)")
	return cmd
}

func newVersion(copts *cli.ClientOptions) *cobra.Command {
	var opts cli.VersionOptions
	cmd := &cobra.Command{
		Use:   "version",
		Short: "The versions of this tool and of each control plane replica",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := clients(copts)
			if err != nil {
				return err
			}
			return cli.WriteVersion(cmd.Context(), cmd.OutOrStdout(), cs, opts)
		},
	}
	outputFlag(cmd, &opts.Output)
	cmd.Flags().BoolVar(&opts.ClientOnly, "client", false, "print the client's version only")
	return cmd
}

// Execute runs root with args under ctx (tests).
func Execute(ctx context.Context, root *cobra.Command, args ...string) error {
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
