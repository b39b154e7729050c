package core

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// selfSigned returns a PEM CA certificate and its PEM key.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<33, 0), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}

type secretData map[string]map[string][]byte

func (d secretData) Secret(ns, name string) ([]byte, []byte, bool) {
	v := d[ns+"/"+name]
	return v["tls.crt"], v["tls.key"], len(v["tls.crt"]) > 0 && len(v["tls.key"]) > 0
}

func (d secretData) SecretData(ns, name string) (map[string][]byte, bool) {
	v, ok := d[ns+"/"+name]
	return v, ok
}

// DestinationRule credentials become the SDS secrets the clusters name,
// read from the proxy's namespace: the client certificate of MUTUAL, the
// CA unless insecureSkipVerify; a missing Secret is reported at the field.
func TestBuildUpstreamSecrets(t *testing.T) {
	cert, key := selfSigned(t)
	push := pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: partner, namespace: default}
spec:
  host: partner.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: client}
  subsets:
  - name: v1
    trafficPolicy:
      portLevelSettings:
      - port: {number: 443}
        tls: {mode: SIMPLE, credentialName: missing}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: skip, namespace: default}
spec:
  host: skip.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: nocheck, insecureSkipVerify: true}
`)
	store := secretData{
		"gw/client":         {"tls.crt": cert, "tls.key": key, "ca.crt": cert},
		"gw/nocheck":        {"tls.crt": cert, "tls.key": key},
		"other/missing":     {"ca.crt": cert},
		"default/client":    {"tls.crt": []byte("not this one")},
		"gw/unused-cacert":  {"ca.crt": cert},
		"gw/missing-cacert": {"cacert": []byte("not PEM")},
	}
	gw := model.SecretScope{Identity: &model.Identity{Namespace: "gw", ServiceAccount: "ingress"}}
	secrets, refused, errs := BuildUpstreamSecrets(push, store, gw)
	var names []string
	for _, s := range secrets {
		names = append(names, s.GetName())
		if err := s.ValidateAll(); err != nil {
			t.Errorf("%s: %v", s.GetName(), err)
		}
	}
	if got := strings.Join(names, " "); got != "kubernetes://client kubernetes://client-cacert kubernetes://nocheck" {
		t.Errorf("secrets %s", got)
	}
	if string(secrets[1].GetValidationContext().GetTrustedCa().GetInlineBytes()) != string(cert) {
		t.Error("CA of client-cacert")
	}
	if len(errs) != 1 || errs[0].Key.Name != "partner" || errs[0].Field != "spec.subsets[0].trafficPolicy.portLevelSettings[0].tls.credentialName" ||
		!strings.Contains(errs[0].Message, "gw/missing-cacert is not usable") {
		t.Errorf("errors %v", errs)
	}
	if len(refused) != 0 {
		t.Errorf("refusals for the proxies' own namespace: %+v", refused)
	}

	// Proxies of another namespace read that namespace's Secrets (its
	// own "missing" holds a CA), and the gw Secrets are never theirs.
	other := model.SecretScope{Identity: &model.Identity{Namespace: "other", ServiceAccount: "ingress"}}
	secrets, _, _ = BuildUpstreamSecrets(push, store, other)
	if len(secrets) != 1 || secrets[0].GetName() != "kubernetes://missing-cacert" {
		t.Errorf("proxies of namespace other got %v, want their own missing-cacert only", secrets)
	}
	// Unauthenticated proxies get none, each refused and reported, and
	// nothing is read for them.
	secrets, refused, errs = BuildUpstreamSecrets(push, nil, model.SecretScope{})
	if len(secrets) != 0 || len(refused) != 4 || refused[0].DestinationRule != "default/partner" ||
		refused[0].Field != "spec.trafficPolicy.tls.credentialName" || refused[0].Resource != "kubernetes://client" ||
		!strings.Contains(refused[0].Reason, "only sent to authenticated proxies") || len(errs) != 4 {
		t.Errorf("plaintext: secrets %d, refused %+v, errors %v", len(secrets), refused, errs)
	}
}

// A DestinationRule credential of another namespace reaches the proxies
// only when the authorizer lets their ServiceAccount get the Secret; a
// refusal is reported and does not stop the others.
func TestBuildUpstreamSecretsCrossNamespace(t *testing.T) {
	cert, key := selfSigned(t)
	push := pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: partner, namespace: default}
spec:
  host: partner.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: apps/client, insecureSkipVerify: true}
`)
	store := secretData{"apps/client": {"tls.crt": cert, "tls.key": key}}
	id := &model.Identity{Namespace: "gw", ServiceAccount: "ingress"}
	for _, tc := range []struct {
		allow bool
		want  int
	}{{false, 0}, {true, 1}} {
		scope := model.SecretScope{Identity: id, Authorizer: authorizerFunc(func(model.Identity, model.SecretRef) (bool, string) { return tc.allow, "test" })}
		secrets, refused, _ := BuildUpstreamSecrets(push, store, scope)
		if len(secrets) != tc.want || len(refused) != 1-tc.want {
			t.Errorf("allowed %v: %d secrets, refused %+v", tc.allow, len(secrets), refused)
		}
		if tc.want == 1 && secrets[0].GetName() != "kubernetes://apps/client" {
			t.Errorf("secret named %s", secrets[0].GetName())
		}
	}
}

type authorizerFunc func(model.Identity, model.SecretRef) (bool, string)

func (f authorizerFunc) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	return f(id, ref)
}
