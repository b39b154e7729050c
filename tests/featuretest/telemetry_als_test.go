package featuretest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	filealv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	grpcalsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	alsv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// alsServer is a real gRPC access log service (what an Envoy's HTTP gRPC
// access logger streams to): it hands every log name it is sent to logs.
type alsServer struct {
	alsv3.UnimplementedAccessLogServiceServer
	logs chan string
}

func (s *alsServer) StreamAccessLogs(stream alsv3.AccessLogService_StreamAccessLogsServer) error {
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil
		}
		if id := msg.GetIdentifier(); id != nil {
			s.logs <- id.GetLogName()
		}
	}
}

// startALS serves the access log service on 127.0.0.1 and returns its port.
func startALS(t *testing.T) (*alsServer, uint32) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	als := &alsServer{logs: make(chan string, 16)}
	alsv3.RegisterAccessLogServiceServer(srv, als)
	go srv.Serve(lis) //nolint:errcheck // Serve returns when Stop is called
	t.Cleanup(srv.Stop)
	return als, uint32(lis.Addr().(*net.TCPAddr).Port)
}

// httpALS is the HTTP gRPC access logger of listener 0.0.0.0_80's
// connection manager, or nil.
func httpALS(s adsc.State) *grpcalsv3.HttpGrpcAccessLogConfig {
	l := s.Listeners["0.0.0.0_80"]
	if l == nil || len(l.GetFilterChains()) == 0 {
		return nil
	}
	for _, f := range l.GetFilterChains()[0].GetFilters() {
		cm := &hcmv3.HttpConnectionManager{}
		if f.GetName() != wellknown.HTTPConnectionManager || f.GetTypedConfig().UnmarshalTo(cm) != nil {
			continue
		}
		for _, al := range cm.GetAccessLog() {
			cfg := &grpcalsv3.HttpGrpcAccessLogConfig{}
			if al.GetTypedConfig().UnmarshalTo(cfg) == nil {
				return cfg
			}
		}
	}
	return nil
}

// endpointAddr is the first endpoint address of a load assignment.
func endpointAddr(cla *endpointv3.ClusterLoadAssignment) string {
	for _, le := range cla.GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			return fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue())
		}
	}
	return ""
}

// A Telemetry naming an envoyHttpAls provider whose service is a
// ServiceEntry for a real gRPC access log server on 127.0.0.1 gives the
// gateway (over ADS) the HTTP gRPC access logger naming the provider's
// cluster outbound|PORT||HOST (istiod's LookupCluster), that cluster, and
// its endpoint: the server's address, which an Envoy would stream its
// access log to. The test streams to it as Envoy would, with the logger's
// log name, and the server receives it.
func TestTelemetryHTTPAccessLogServiceReachesRealServer(t *testing.T) {
	als, port := startALS(t)
	const host = "als.istio-system.svc.cluster.local"
	cluster := fmt.Sprintf("outbound|%d||%s", port, host)
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), objectsYAML(port, host))
	meshFile := filepath.Join(t.TempDir(), "mesh")
	serverenv.WriteFile(t, meshFile, fmt.Sprintf(`
extensionProviders:
- name: als
  envoyHttpAls:
    service: %s
    port: %d
    logName: edge
`, host, port))
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, MeshConfigFile: meshFile})

	gw := e.gateway("ingress", publicLabels, nil)
	s := waitFor(t, gw, "the HTTP gRPC access logger and its cluster", func(s adsc.State) bool {
		cfg := httpALS(s)
		return allACKed(s) && cfg != nil && cfg.GetCommonConfig().GetGrpcService().GetEnvoyGrpc().GetClusterName() == cluster &&
			s.Clusters[cluster] != nil && endpointAddr(s.Endpoints[cluster]) != ""
	})
	cfg := httpALS(s)
	if cfg.GetCommonConfig().GetLogName() != "edge" {
		t.Errorf("log name %q, want the provider's edge", cfg.GetCommonConfig().GetLogName())
	}
	addr := endpointAddr(s.Endpoints[cluster])
	if want := fmt.Sprintf("127.0.0.1:%d", port); addr != want {
		t.Fatalf("cluster %s endpoint %s, want the access log server's %s", cluster, addr, want)
	}

	// Stream to the endpoint as Envoy's logger would.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), serverenv.WaitTimeout)
	defer cancel()
	stream, err := alsv3.NewAccessLogServiceClient(conn).StreamAccessLogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&alsv3.StreamAccessLogsMessage{
		Identifier: &alsv3.StreamAccessLogsMessage_Identifier{LogName: cfg.GetCommonConfig().GetLogName()},
		LogEntries: &alsv3.StreamAccessLogsMessage_HttpLogs{HttpLogs: &alsv3.StreamAccessLogsMessage_HTTPAccessLogEntries{}},
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-als.logs:
		if name != "edge" {
			t.Errorf("the access log server received log %q, want edge", name)
		}
	case <-ctx.Done():
		t.Fatal("the access log server received nothing")
	}
}

// objectsYAML is a gateway routing to reviews, the access log server's
// ServiceEntry (a STATIC endpoint at 127.0.0.1:port) and the root
// namespace's Telemetry naming the als provider.
func objectsYAML(port uint32, host string) string {
	return fmt.Sprintf(`
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bookinfo, namespace: default}
spec:
  hosts: [bookinfo.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: reviews.default.svc.cluster.local, port: {number: 9080}}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.11}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: als, namespace: istio-system}
spec:
  hosts: [%[2]s]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: %[1]d, name: grpc-als, protocol: GRPC}]
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: mesh-default, namespace: istio-system}
spec:
  accessLogging: [{providers: [{name: als}]}]
`, port, host)
}

// fileLogPath is the path of the file access logger on listener
// 0.0.0.0_80's connection manager ("" for none).
func fileLogPath(s adsc.State) string {
	l := s.Listeners["0.0.0.0_80"]
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			cm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(cm) != nil {
				continue
			}
			for _, al := range cm.GetAccessLog() {
				fl := &filealv3.FileAccessLog{}
				if al.GetTypedConfig().UnmarshalTo(fl) == nil {
					return fl.GetPath()
				}
			}
		}
	}
	return ""
}

// The mesh config file's accessLogFile is the gateways' access log (with
// no Telemetry, istiod's FileAccessLogFromMeshConfig on every connection
// manager), and a change to the file reaches the connected gateway.
func TestMeshConfigAccessLogFileReachesGateways(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), meshRootFiles)
	meshFile := filepath.Join(t.TempDir(), "mesh")
	serverenv.WriteFile(t, meshFile, "accessLogFile: /dev/stdout\n")
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, MeshConfigFile: meshFile})
	gw := e.gateway("ingress", publicLabels, nil)
	waitFor(t, gw, "the access log to /dev/stdout", func(s adsc.State) bool {
		return allACKed(s) && fileLogPath(s) == "/dev/stdout"
	})
	serverenv.WriteFile(t, meshFile, "accessLogFile: /var/log/gateway.log\n")
	waitFor(t, gw, "the access log to the new file", func(s adsc.State) bool {
		return allACKed(s) && fileLogPath(s) == "/var/log/gateway.log"
	})
	serverenv.WriteFile(t, meshFile, "enableTracing: false\n")
	waitFor(t, gw, "no access log", func(s adsc.State) bool {
		return allACKed(s) && s.Listeners["0.0.0.0_80"] != nil && fileLogPath(s) == ""
	})
}
