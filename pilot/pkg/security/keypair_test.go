package security

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
)

// A Secret-volume style rotation (..data symlink swap) is picked up: new
// handshakes get the new certificate while a connection opened before
// keeps working.
func TestKeyPairReloadsOnSymlinkSwap(t *testing.T) {
	ca := certs.NewCA(t, "ca")
	dir := t.TempDir()
	first, second := ca.Server(t, "a.example"), ca.Server(t, "a.example")
	certFile, keyFile := certs.WriteSecretVolume(t, dir, first)
	kp, err := NewKeyPair(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	// A long interval: only the file-system event can make the reload.
	go func() { kp.Run(ctx, time.Hour); close(runDone) }()
	t.Cleanup(func() { cancel(); <-runDone })

	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: kp.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }() // echo
		}
	}()
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "a.example"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	old := dial()
	if got := old.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(first.Serial) != 0 {
		t.Fatalf("serving serial %v, want the first %v", got, first.Serial)
	}

	reloaded := kp.Reloaded()
	certs.WriteSecretVolume(t, dir, second)
	select {
	case <-reloaded:
	case <-time.After(10 * time.Second):
		t.Fatal("the symlink swap was not picked up")
	}
	if got := dial().ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(second.Serial) != 0 {
		t.Errorf("new handshake serves serial %v, want the rotated %v", got, second.Serial)
	}
	// The connection from before the rotation still works.
	if _, err := old.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(old).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Errorf("old connection after rotation: %q, %v", line, err)
	}
}

// A broken rotation (key not matching) keeps serving the previous pair.
func TestKeyPairKeepsOldPairOnBadFiles(t *testing.T) {
	ca := certs.NewCA(t, "ca")
	dir := t.TempDir()
	first := ca.Server(t, "a.example")
	certFile, keyFile := certs.WriteSecretVolume(t, dir, first)
	kp, err := NewKeyPair(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	bad := *ca.Server(t, "a.example")
	bad.KeyPEM = ca.Server(t, "b.example").KeyPEM
	certs.WriteSecretVolume(t, dir, &bad)
	if _, err := kp.reload(); err == nil {
		t.Fatal("mismatched key accepted")
	}
	if kp.Current().Leaf.SerialNumber.Cmp(first.Serial) != 0 {
		t.Error("a bad rotation replaced the served pair")
	}
	if _, err := NewKeyPair(certFile, keyFile, nil); err == nil {
		t.Error("NewKeyPair accepted a mismatched pair")
	}
}
