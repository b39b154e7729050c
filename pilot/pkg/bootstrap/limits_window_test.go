package bootstrap

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
)

// A client's data gets no PING back from our server: gRPC's bandwidth
// estimator, which answers data with a window update and a PING, is off.
// The same exchange against gRPC's default options does get a PING, so
// the probe would see one.
func TestServerDoesNotPingClientsThatSendData(t *testing.T) {
	if pings := pingsAfterOneCall(t, grpcServerOptions(DefaultLimits)); pings != 0 {
		t.Fatalf("our options: %d PING frames after a client's request, want 0", pings)
	}
	if pings := pingsAfterOneCall(t, nil); pings == 0 {
		t.Fatal("gRPC's default options: no PING after a client's request; the probe cannot tell the difference")
	}
}

// pingsAfterOneCall serves gRPC's health service with opts, makes one call
// over a raw HTTP/2 connection, and counts the PING frames the server sends
// until the call's trailers.
func pingsAfterOneCall(t *testing.T, opts []grpc.ServerOption) int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.health.v1.Health/Check"},
		{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	body, _ := proto.Marshal(&healthpb.HealthCheckRequest{})
	msg := append([]byte{0, 0, 0, 0, byte(len(body))}, body...)
	if err := fr.WriteData(1, true, msg); err != nil {
		t.Fatal(err)
	}
	pings := 0
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's frames: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				pings++
				_ = fr.WritePing(true, f.Data)
			}
		case *http2.HeadersFrame:
			if f.StreamID == 1 && f.StreamEnded() {
				return pings
			}
		}
	}
}
