// Command floor is the benchmark's floor server (see package floorserver):
// it serves a capture of pilot-discovery's responses to every ADS stream
// without translating anything, and switches to the update capture on
// POST /update.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"google.golang.org/grpc"

	"github.com/wayfinder-dev/wayfinder/pkg/grpctransport"
	"github.com/wayfinder-dev/wayfinder/tools/floor/floorserver"
	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run() error {
	dumpDir := flag.String("dump-dir", "", "the load tool's --dump-dir (with cold/ and update/) (required)")
	grpcAddr := flag.String("grpc-addr", "127.0.0.1:15010", "ADS address")
	httpAddr := flag.String("http-addr", "127.0.0.1:15014", "HTTP address: POST /update, GET /stats, GET /healthz/ready")
	delta := flag.Bool("delta", false, "the dumps are of a delta run (loadgen --delta --dump-dir); serve delta ADS")
	flag.Parse()
	if *dumpDir == "" {
		return errors.New("--dump-dir is required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cold, err := floorserver.LoadDump(filepath.Join(*dumpDir, "cold"), "cold", *delta)
	if err != nil {
		return err
	}
	var update floorserver.Dump
	if _, err := os.Stat(filepath.Join(*dumpDir, "update")); err == nil {
		if update, err = floorserver.LoadDump(filepath.Join(*dumpDir, "update"), "update", *delta); err != nil {
			return err
		}
	}
	srv, err := floorserver.New(cold, update, *delta, logger)
	if err != nil {
		return err
	}

	// The same transport settings as pilot-discovery, so the two differ only
	// in what they compute.
	g := grpc.NewServer(append(grpctransport.ServerOptions(),
		grpc.ForceServerCodecV2(xdswire.Codec{}), grpc.MaxSendMsgSize(1<<30))...)
	srv.Register(g)
	gl, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /update", func(w http.ResponseWriter, _ *http.Request) {
		if !srv.Update() {
			http.Error(w, "no update dump, or already applied", http.StatusConflict)
			return
		}
		fmt.Fprintln(w, "updated")
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(srv.Stats())
	})
	mux.HandleFunc("GET /healthz/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ready") })
	hl, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- g.Serve(gl) }()
	go func() { errc <- hs.Serve(hl) }()
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	g.Stop()
	_ = hs.Close()
	return err
}
