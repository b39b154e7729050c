// Package app holds pilot-discovery's commands and flags. Flags are parsed
// here and only here, into bootstrap.Options.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
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
	var logLevel, logFormat string
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
			if opts.ConfigDir == "" {
				return usageError(cmd, "--config-dir is required (file mode is the only config source so far)")
			}
			s, err := bootstrap.NewServer(opts)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return s.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.GRPCAddr, "grpc-addr", ":15010", "address of the ADS gRPC server")
	f.StringVar(&opts.HTTPAddr, "http-addr", ":15014", "address of the debug, readiness and metrics HTTP server")
	f.StringVar(&opts.ConfigDir, "config-dir", "", "folder of Istio YAML to serve (file mode)")
	f.DurationVar(&opts.RescanInterval, "config-rescan-interval", 30*time.Second, "how often file mode rescans --config-dir as a backstop to file-system events")
	f.DurationVar(&opts.Debounce.QuietPeriod, "debounce-after", 100*time.Millisecond, "quiet period after a config change before pushing")
	f.DurationVar(&opts.Debounce.MaxDelay, "debounce-max", 10*time.Second, "longest a config change waits for the quiet period")
	f.DurationVar(&opts.ShutdownGrace, "shutdown-grace", 5*time.Second, "how long shutdown waits for streams to close")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
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
