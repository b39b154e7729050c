package featuretest

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// File mode with --tls-cert-file in a Secret-volume layout and client
// certificates: a gateway is served over TLS; rotating the serving
// certificate (the kubelet's ..data symlink swap) changes what new
// handshakes see while the open stream stays up and keeps getting
// updates.
func TestSecurePortRotatesCertificateWithoutDroppingStreams(t *testing.T) {
	ca := certs.NewCA(t, "serving-ca")
	clientCA := certs.NewCA(t, "client-ca")
	certDir, cfgDir := t.TempDir(), t.TempDir()
	first := ca.Server(t, "pilot-discovery.wayfinder-system.svc")
	certFile, keyFile := certs.WriteSecretVolume(t, certDir, first)
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	if err := os.WriteFile(caFile, clientCA.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: cfgDir}
	for name, data := range baseFiles() {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: cfgDir, Security: bootstrap.SecurityOptions{
		SecureGRPCAddr: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: caFile,
	}})

	var mu sync.Mutex
	var served []string // serial numbers of the certificates handshakes saw
	last := func() string { mu.Lock(); defer mu.Unlock(); return served[len(served)-1] }
	dial := func(pod string) *adsc.Client {
		t.Helper()
		cert := clientCA.Client(t, certs.SPIFFE("cluster.local", "istio-system", "gw"))
		cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "pilot-discovery.wayfinder-system.svc", Certificates: []tls.Certificate{cert.Pair},
			VerifyConnection: func(cs tls.ConnectionState) error {
				mu.Lock()
				defer mu.Unlock()
				served = append(served, cs.PeerCertificates[0].SerialNumber.Text(16))
				return nil
			}}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		c, err := adsc.Dial(ctx, adsc.Config{
			Address: e.server.SecureGRPCAddr().String(), TLS: cfg,
			Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: "istio-system", Labels: publicLabels}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	old := dial("gw-before")
	waitFor(t, old, "config over TLS", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") })
	if last() != first.Serial.Text(16) {
		t.Fatalf("handshake saw %v, want the first certificate %s", served, first.Serial.Text(16))
	}

	second := ca.Server(t, "pilot-discovery.wayfinder-system.svc")
	certs.WriteSecretVolume(t, certDir, second)
	// New handshakes see the new certificate once the reload happened;
	// dial until one does (each dial is a new connection).
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for last() != second.Serial.Text(16) {
		if ctx.Err() != nil {
			t.Fatalf("new handshakes still see %v after the rotation", served)
		}
		dial("gw-after").Close()
	}

	// The stream opened before the rotation is still up and still served.
	e.write("routes.yaml", routesYAML("/rotated"))
	waitFor(t, old, "an update on the stream from before the rotation", func(s adsc.State) bool {
		return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/rotated")
	})
	select {
	case <-old.Done():
		t.Fatalf("the stream from before the rotation ended: %v", old.Err())
	default:
	}
}
