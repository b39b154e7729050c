package apiserver

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ServiceAccountIssuer is the test API server's --service-account-issuer;
// with no --api-audiences it is also the API server's own audience.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// ServiceAccount creates ServiceAccount ns/name unless it exists and
// returns it.
func (c *Cluster) ServiceAccount(t testing.TB, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	sas := c.Clientset().CoreV1().ServiceAccounts(ns)
	sa, err := sas.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		sa, err = sas.Get(context.Background(), name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("ServiceAccount %s/%s: %v", ns, name, err)
	}
	return sa
}

// Token returns a real token of ServiceAccount ns/name (created if absent)
// from the TokenRequest API, as a projected token volume or `kubectl create
// token` gets one: for audiences (none: the API server's own) and valid for
// expiry (the API server's minimum is 10 minutes).
func (c *Cluster) Token(t testing.TB, ns, name string, audiences []string, expiry time.Duration) string {
	t.Helper()
	c.ServiceAccount(t, ns, name)
	tr, err := c.Clientset().CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To(int64(expiry.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// SignedToken returns a token for ServiceAccount ns/name (created if
// absent) signed with the API server's service-account key, with the
// claims a TokenRequest token has and the given expiry time, which may be
// in the past: TokenRequest cannot issue an already expired token, and
// this can. With a future exp the API server accepts it like its own.
func (c *Cluster) SignedToken(t testing.TB, ns, name string, audiences []string, exp time.Time) string {
	t.Helper()
	sa := c.ServiceAccount(t, ns, name)
	key, err := readRSAKey(filepath.Join(c.Dir, "service-account.key"))
	if err != nil {
		t.Fatal(err)
	}
	iat := exp.Add(-time.Hour)
	if now := time.Now(); now.Before(iat) {
		iat = now
	}
	claims := map[string]any{
		"iss": ServiceAccountIssuer, "sub": "system:serviceaccount:" + ns + ":" + name, "aud": audiences,
		"exp": exp.Unix(), "iat": iat.Unix(), "nbf": iat.Unix(),
		"kubernetes.io": map[string]any{"namespace": ns, "serviceaccount": map[string]any{"name": name, "uid": string(sa.UID)}},
	}
	tok, err := signRS256(key, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func readRSAKey(path string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New(path + ": no PEM block")
	}
	return x509.ParsePKCS1PrivateKey(block.Bytes)
}

func signRS256(key *rsa.PrivateKey, claims any) (string, error) {
	enc := base64.RawURLEncoding
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}
