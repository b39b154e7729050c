package load_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
	"github.com/wayfinder-dev/wayfinder/tools/floor/floorserver"
	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

const (
	services = 20
	gateways = 5
)

// startPilot runs the control plane in process on a generated workload.
func startPilot(t *testing.T, dir string) string {
	t.Helper()
	if err := workload.Write(dir, workload.Options{Services: services}); err != nil {
		t.Fatal(err)
	}
	s, err := bootstrap.NewServer(bootstrap.Options{
		GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ConfigDir: dir,
		Debounce: debounce.Options{QuietPeriod: 10 * time.Millisecond, MaxDelay: time.Second},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pilot: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("pilot exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("pilot not ready")
	}
	return s.GRPCAddr().String()
}

// checkConverged asserts that every gateway converged cold and after the
// update, without NACKs, errors or a timeout.
func checkConverged(t *testing.T, rep *load.Report) {
	t.Helper()
	if rep.TimedOut || rep.Unimplemented || rep.NACKs != 0 || rep.Errors != 0 {
		t.Fatalf("run failed: %+v", rep)
	}
	if rep.Cold.Converged != gateways || rep.Cold.P99Ms <= 0 || rep.Cold.MaxMs < rep.Cold.P50Ms {
		t.Fatalf("cold: %+v", rep.Cold)
	}
	if rep.Update == nil || rep.Update.Converged != gateways || rep.Update.P99Ms <= 0 {
		t.Fatalf("update: %+v", rep.Update)
	}
	if rep.BytesPerProxy.Mean <= 0 || rep.Responses < 4*gateways {
		t.Fatalf("bytes %+v, responses %d", rep.BytesPerProxy, rep.Responses)
	}
}

func TestPilotSotWThenFloor(t *testing.T) { pilotThenFloor(t, false) }

func TestPilotDeltaThenFloor(t *testing.T) { pilotThenFloor(t, true) }

// pilotThenFloor runs the load against pilot-discovery, capturing its
// responses, and then against the floor serving that capture, in one
// protocol.
func pilotThenFloor(t *testing.T, delta bool) {
	dir := t.TempDir()
	addr := startPilot(t, dir)
	dumps := filepath.Join(t.TempDir(), "dumps")
	converged := 0
	rep, err := load.Run(context.Background(), load.Options{
		Address: addr, Gateways: gateways, Delta: delta, Timeout: time.Minute, Validate: true, DumpDir: dumps,
		UpdatePrefix: workload.UpdatePrefix,
		// Called once, between cold convergence and the update.
		Converged: func(context.Context) { converged++ },
		Trigger: func(context.Context) error {
			if converged != 1 {
				t.Errorf("update triggered after %d Converged calls, want 1", converged)
			}
			return workload.WriteUpdate(dir, 3, services, workload.UpdatePrefix)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkConverged(t, rep)
	if converged != 1 {
		t.Errorf("Converged called %d times", converged)
	}
	// Every gateway gets the same config: a handful of distinct contents
	// (four types, then the changed routes), not one parse per response.
	if rep.UniqueParses > 8 {
		t.Errorf("%d distinct parses for %d identical gateways", rep.UniqueParses, gateways)
	}

	// The floor serves the captured responses the same way.
	cold, err := floorserver.LoadDump(filepath.Join(dumps, "cold"), "cold", delta)
	if err != nil {
		t.Fatal(err)
	}
	update, err := floorserver.LoadDump(filepath.Join(dumps, "update"), "update", delta)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := floorserver.New(cold, update, delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.ForceServerCodecV2(xdswire.Codec{}))
	fs.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	defer g.Stop()
	frep, err := load.Run(context.Background(), load.Options{
		Address: l.Addr().String(), Gateways: gateways, Delta: delta, Timeout: time.Minute, Validate: true,
		UpdatePrefix: workload.UpdatePrefix,
		Trigger: func(context.Context) error {
			if !fs.Update() {
				t.Error("floor update refused")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkConverged(t, frep)
	if frep.BytesPerProxy.Mean < rep.BytesPerProxy.Mean/2 {
		t.Errorf("the floor sent %v bytes per proxy, pilot %v", frep.BytesPerProxy.Mean, rep.BytesPerProxy.Mean)
	}
	st := fs.Stats()
	if st.Streams != gateways || st.NACKs != 0 || st.ACKs == 0 || st.Updates != 1 {
		t.Errorf("floor stats %+v", st)
	}
	// Only the route configuration changed, so the update resent only RDS.
	if st.Responses != int64(5*gateways) {
		t.Errorf("floor sent %d responses, want 4 types + 1 RDS update per gateway", st.Responses)
	}
}

func TestFloorRefusesDelta(t *testing.T) {
	fs, err := floorserver.New(fakeDump(), nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.ForceServerCodecV2(xdswire.Codec{}))
	fs.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	defer g.Stop()
	rep, err := load.Run(context.Background(), load.Options{Address: l.Addr().String(), Gateways: 2, Delta: true, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Unimplemented || rep.Cold.Converged != 0 || rep.TimedOut {
		t.Fatalf("want a prompt Unimplemented report, got %+v", rep)
	}
}

// fakeDump has an empty response of each type.
func fakeDump() floorserver.Dump {
	d := floorserver.Dump{}
	for typeURL := range load.DumpFiles {
		b, err := proto.Marshal(&discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "1", Nonce: "1"})
		if err != nil {
			panic(err)
		}
		d[typeURL] = &xdswire.Frame{Bytes: b}
	}
	return d
}
