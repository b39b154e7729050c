package security

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// Replicas starting together converge on one CA and serving certificate,
// published in the root-cert ConfigMap, and the certificate verifies for
// every name against that CA.
func TestEnsureSelfSignedConverges(t *testing.T) {
	client := fake.NewClientset()
	names := []string{"pilot-discovery.wf.svc", "pilot-discovery.wf.svc.cluster.local", "extra.example", "127.0.0.1"}
	const replicas = 4
	var wg sync.WaitGroup
	pairs := make([]tls.Certificate, replicas)
	cas := make([][]byte, replicas)
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			pairs[i], cas[i], errs[i] = EnsureSelfSigned(context.Background(), SelfSignedOptions{
				Client: kclienttest.Kube(client), Namespace: "wf", DNSNames: names, Logger: slog.New(slog.DiscardHandler)})
		})
	}
	wg.Wait()
	for i := range replicas {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if !bytes.Equal(pairs[i].Certificate[0], pairs[0].Certificate[0]) || !bytes.Equal(cas[i], cas[0]) {
			t.Fatalf("replica %d serves another certificate", i)
		}
	}
	cm, err := client.CoreV1().ConfigMaps("wf").Get(context.Background(), RootCertConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[RootCertKey] != string(cas[0]) {
		t.Error("ConfigMap root-cert.pem is not the CA served")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data[RootCertKey])) {
		t.Fatal("root-cert.pem holds no certificate")
	}
	leaf, err := x509.ParseCertificate(pairs[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: n, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s: %v", n, err)
		}
	}
	// A later start reads the same Secret.
	again, _, err := EnsureSelfSigned(context.Background(), SelfSignedOptions{Client: kclienttest.Kube(client), Namespace: "wf", DNSNames: names})
	if err != nil || !bytes.Equal(again.Certificate[0], pairs[0].Certificate[0]) {
		t.Errorf("restart: %v, or another certificate", err)
	}
}
