// Command loadgen simulates P Envoy gateways on ADS against a control plane
// and prints a JSON report of cold and update convergence (see package
// load). With --config-dir (a workloadgen folder) it makes the update
// itself by rewriting one VirtualService; with --trigger-url it POSTs there
// instead (the floor server's /update).
//
// It exits 0 when every gateway converged without NACKs, 1 when the run
// timed out, was refused (Unimplemented) or saw NACKs, 2 on bad usage.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

func main() { os.Exit(run()) }

func run() int {
	var o load.Options
	flag.StringVar(&o.Address, "addr", "127.0.0.1:15010", "ADS server host:port")
	flag.IntVar(&o.Gateways, "gateways", 100, "P: simulated gateways, one gRPC connection each")
	flag.BoolVar(&o.Delta, "delta", false, "speak delta xDS instead of state of the world")
	flag.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "bound on the whole run")
	flag.BoolVar(&o.Validate, "validate", true, "validate each distinct response (once) and NACK what fails, like Envoy")
	flag.BoolVar(&o.EagerLDS, "eager-lds", false, "request LDS with CDS instead of after the endpoints (Envoy waits)")
	flag.StringVar(&o.DumpDir, "dump-dir", "", "write gateway 0's ACKed responses here (cold/ and update/), for the floor server")
	flag.DurationVar(&o.BackoffBase, "backoff-base", 500*time.Millisecond, "reconnect backoff base (Envoy's default)")
	flag.IntVar(&o.Stuck, "stuck", 0, "also open this many gateways that never read (hostile or broken clients), to measure what they cost the others")
	flag.DurationVar(&o.BackoffMax, "backoff-max", 30*time.Second, "reconnect backoff ceiling (Envoy's default)")
	configDir := flag.String("config-dir", "", "workload folder; the update rewrites one VirtualService in it")
	services := flag.Int("services", 0, "N of the workload in --config-dir (required with it)")
	updateIndex := flag.Int("update-index", 0, "which VirtualService the update changes")
	flag.StringVar(&o.UpdatePrefix, "update-prefix", workload.UpdatePrefix, "prefix the update writes; convergence ends when every gateway has ACKed a route config with it")
	triggerURL := flag.String("trigger-url", "", "instead of --config-dir, POST here to make the update (the floor server's /update)")
	out := flag.String("out", "", "write the JSON report here instead of stdout")
	verbose := flag.Bool("v", false, "log protocol errors to stderr")
	cpuProfile := flag.String("cpu-profile", "", "write the load tool's own CPU profile here (to tell its cost from the server's)")
	flag.Parse()
	if flag.NArg() > 0 || (*configDir != "" && *triggerURL != "") || (*configDir != "" && *services < 1) {
		fmt.Fprintln(os.Stderr, "usage: loadgen [--addr A] [--gateways P] [--delta] [--config-dir DIR --services N | --trigger-url URL] [--timeout D] [--out FILE]")
		flag.PrintDefaults()
		return 2
	}
	if *verbose {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	switch {
	case *configDir != "":
		o.Trigger = func(context.Context) error {
			return workload.WriteUpdate(*configDir, *updateIndex, *services, o.UpdatePrefix)
		}
	case *triggerURL != "":
		o.Trigger = func(ctx context.Context) error { return post(ctx, *triggerURL) }
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: --cpu-profile:", err)
			return 2
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := load.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	data = append(data, '\n')
	if *out != "" {
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 1
		}
	} else {
		os.Stdout.Write(data)
	}
	if rep.Unimplemented {
		fmt.Fprintf(os.Stderr, "loadgen: the server answered Unimplemented for %s ADS\n", rep.Mode)
	}
	if rep.TimedOut || rep.Unimplemented || rep.NACKs > 0 || rep.Cold.Converged < rep.Gateways ||
		(rep.Update != nil && rep.Update.Converged < rep.Gateways) {
		return 1
	}
	return 0
}

func post(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}
