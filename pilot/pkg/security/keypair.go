package security

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultReloadInterval is how often KeyPair rereads its files behind
// file-system events (which a Secret volume's symlink swap or a network
// file system may not deliver).
const DefaultReloadInterval = 10 * time.Second

// KeyPair serves a certificate and key read from files and reread when they
// change. Handshakes read the current pair from an atomic pointer, so a
// rotation takes effect for new connections at once and open connections
// (and their streams) are untouched.
type KeyPair struct {
	certFile, keyFile string
	log               *slog.Logger
	cur               atomic.Pointer[tls.Certificate]

	mu                sync.Mutex // serialises reloads
	lastCert, lastKey []byte
	reloaded          chan struct{} // closed and replaced on every change
}

// NewKeyPair loads the pair; an unreadable or mismatched pair is an error
// naming the files.
func NewKeyPair(certFile, keyFile string, log *slog.Logger) (*KeyPair, error) {
	if log == nil {
		log = slog.Default()
	}
	k := &KeyPair{certFile: certFile, keyFile: keyFile, log: log, reloaded: make(chan struct{})}
	if _, err := k.reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// StaticKeyPair serves a fixed certificate (the self-signed one).
func StaticKeyPair(cert tls.Certificate) *KeyPair {
	k := &KeyPair{reloaded: make(chan struct{})}
	k.cur.Store(&cert)
	return k
}

// GetCertificate is tls.Config.GetCertificate.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.cur.Load(), nil
}

// Current is the certificate being served.
func (k *KeyPair) Current() *tls.Certificate { return k.cur.Load() }

// Reloaded is closed at the next change of the served pair.
func (k *KeyPair) Reloaded() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reloaded
}

// reload reads both files and swaps the pair in when they changed and
// parse. A broken pair (a half-written rotation) keeps the old one.
func (k *KeyPair) reload() (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	certPEM, err := os.ReadFile(k.certFile)
	if err != nil {
		return false, fmt.Errorf("--tls-cert-file %s: %w", k.certFile, err)
	}
	keyPEM, err := os.ReadFile(k.keyFile)
	if err != nil {
		return false, fmt.Errorf("--tls-key-file %s: %w", k.keyFile, err)
	}
	if bytes.Equal(certPEM, k.lastCert) && bytes.Equal(keyPEM, k.lastKey) {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("--tls-cert-file %s and --tls-key-file %s: %w", k.certFile, k.keyFile, err)
	}
	k.cur.Store(&pair)
	k.lastCert, k.lastKey = certPEM, keyPEM
	close(k.reloaded)
	k.reloaded = make(chan struct{})
	return true, nil
}

// Run watches the files' folders (a Kubernetes Secret volume replaces the
// files by swapping a ..data symlink, which is an event on the folder, not
// on the file) and rereads them every interval as a backstop, until ctx
// ends. A static pair returns at once.
func (k *KeyPair) Run(ctx context.Context, interval time.Duration) {
	if k.certFile == "" {
		return
	}
	if interval <= 0 {
		interval = DefaultReloadInterval
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		k.log.Warn("cannot watch the TLS files; rereading them periodically", "err", err, "interval", interval)
	} else {
		defer w.Close()
		for _, dir := range uniqueDirs(k.certFile, k.keyFile) {
			if err := w.Add(dir); err != nil {
				k.log.Warn("cannot watch a TLS file folder; rereading it periodically", "dir", dir, "err", err, "interval", interval)
			}
		}
		events, errs = w.Events, w.Errors
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case err := <-errs:
			k.log.Warn("watching the TLS files", "err", err)
			continue
		case <-t.C:
		}
		changed, err := k.reload()
		switch {
		case err != nil:
			k.log.Error("TLS key pair not reloaded; serving the previous one", "err", err)
		case changed:
			k.log.Info("TLS serving certificate reloaded", "certFile", k.certFile)
		}
	}
}

func uniqueDirs(files ...string) []string {
	var out []string
	for _, f := range files {
		d := filepath.Dir(f)
		dup := false
		for _, o := range out {
			dup = dup || o == d
		}
		if !dup {
			out = append(out, d)
		}
	}
	return out
}
