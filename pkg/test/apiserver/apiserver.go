package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Users of the test API server, authenticated by static bearer tokens.
const (
	// AdminUser is in group system:masters: allowed everything.
	AdminUser = "wayfinder-admin"
	// RestrictedUser has no rights but those AllowRestricted grants, for
	// tests of what a control plane does when RBAC forbids a namespace.
	RestrictedUser = "wayfinder-restricted"
	// RestrictedGroup is RestrictedUser's group.
	RestrictedGroup = "wayfinder:restricted"
)

// insecureHTTP is for readiness polls of our own loopback servers only,
// before their self-signed certificate is known.
var insecureHTTP = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// apiServer is a kube-apiserver process and everything needed to start it
// again the same way.
type apiServer struct {
	binary          string
	dir             string
	port            int
	args            []string
	adminToken      string
	restrictedToken string
	proc            *process
}

// prepareAPIServer writes the token file and service-account key and picks
// the flags; start runs it.
func prepareAPIServer(binary, dir, etcdURL string) (*apiServer, error) {
	a := &apiServer{binary: binary, dir: dir}
	var err error
	if a.adminToken, err = randomToken(); err != nil {
		return nil, err
	}
	if a.restrictedToken, err = randomToken(); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	// Format: token,user,uid,"group1,group2".
	csv := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"%s\"\n",
		a.adminToken, AdminUser, AdminUser, a.restrictedToken, RestrictedUser, RestrictedUser, RestrictedGroup)
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "service-account.key")
	if err := writeRSAKey(saKey); err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "apiserver-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	a.args = []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--etcd-servers=" + etcdURL,
		// The serving certificate is self-signed by the API server into
		// cert-dir on first start and reused on restarts.
		"--cert-dir=" + certDir,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		// A range for Service ClusterIPs to be allocated from; nothing
		// routes to it.
		"--service-cluster-ip-range=10.96.0.0/16",
		// No kubelets, no controller-manager: the API server must not try
		// to manage the kubernetes Service's endpoints, and pods created by
		// tests need no service-account token (the controller that makes
		// default ServiceAccounts does not run).
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		// Fewer moving parts and a faster start for a single-client test
		// server.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		// On SIGTERM, end open watches within a second instead of letting
		// them hold the HTTP server's graceful shutdown open: a restart
		// then takes seconds, and watchers see their watch end cleanly.
		"--shutdown-watch-termination-grace-period=1s",
		"--v=1",
	}
	return a, nil
}

// start runs kube-apiserver, on a fresh free port the first time and on the
// same port afterwards, and waits for /readyz.
func (a *apiServer) start(ctx context.Context) error {
	firstStart := a.port == 0
	var lastErr error
	for range 3 {
		if firstStart {
			ports, err := freePorts(1)
			if err != nil {
				return err
			}
			a.port = ports[0]
		}
		lastErr = a.startOnce(ctx)
		if lastErr == nil || !isBindError(lastErr) {
			return lastErr
		}
		if !firstStart {
			// The old process's port may take a moment to be released:
			// retry the same port after a short pause.
			select {
			case <-ctx.Done():
				return lastErr
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return lastErr
}

func (a *apiServer) startOnce(ctx context.Context) error {
	logPath := filepath.Join(a.dir, "kube-apiserver.log")
	args := append([]string{"--secure-port=" + strconv.Itoa(a.port)}, a.args...)
	p, err := startProcess("kube-apiserver", logPath, a.binary, args...)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, p, a.url()+"/readyz", a.adminToken, func(code int, _ string) bool {
		return code == http.StatusOK
	}); err != nil {
		p.stop(10 * time.Second)
		if logMentionsBindFailure(logPath) {
			return fmt.Errorf("%w: %v", errBind, err)
		}
		return err
	}
	a.proc = p
	return nil
}

func (a *apiServer) stop() {
	if a != nil && a.proc != nil {
		a.proc.stop(15 * time.Second)
		a.proc = nil
	}
}

func (a *apiServer) url() string { return fmt.Sprintf("https://127.0.0.1:%d", a.port) }

// caData is the serving certificate chain the API server generated, which
// clients trust instead of skipping verification.
func (a *apiServer) caData() ([]byte, error) {
	return os.ReadFile(filepath.Join(a.dir, "apiserver-certs", "apiserver.crt"))
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeRSAKey writes a new RSA private key; the API server signs
// service-account tokens with it and derives the public key to verify them.
func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}
