package ingress

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

func tlsSecret(ns, name, cert string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(cert), "tls.key": []byte("key")}}
}

// runSecrets runs Secrets with opts until the test ends, waiting for its
// sync; the change callback (OnAnyChange when anyChange, else OnChange) sends
// "namespace/name" to changes, and next fails the test unless the next
// change is want.
func runSecrets(t *testing.T, opts SecretsOptions, anyChange bool) (s *Secrets, changes chan string, next func(want string)) {
	t.Helper()
	changes = make(chan string, 10)
	signal := func(ns, name string) { changes <- ns + "/" + name }
	if anyChange {
		opts.OnAnyChange = signal
	} else {
		opts.OnChange = signal
	}
	s, err := NewSecrets(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if !s.WaitForSync(ctx) {
		t.Fatal("not synced")
	}
	next = func(want string) {
		t.Helper()
		select {
		case got := <-changes:
			if got != want {
				t.Fatalf("change %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change for %s", want)
		}
	}
	return s, changes, next
}

// Secrets serves certificates from the cache and signals a change only
// when a certificate or key appears, changes or goes.
func TestSecrets(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(tlsSecret("web", "shop", "cert-1"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "token"}, Data: map[string][]byte{"token": []byte("t")}})
	s, changes, next := runSecrets(t, SecretsOptions{Client: kclienttest.Kube(client), Namespaces: []string{"web"}}, false)
	next("web/shop") // the initial list
	if cert, key, ok := s.Secret("web", "shop"); !ok || string(cert) != "cert-1" || string(key) != "key" {
		t.Errorf("shop: %q %q %v", cert, key, ok)
	}
	if _, _, ok := s.Secret("web", "token"); ok {
		t.Error("a Secret without a certificate was served")
	}
	if _, _, ok := s.Secret("other", "shop"); ok {
		t.Error("an unwatched namespace was served")
	}

	// A label change is no change; a new certificate is; so is deletion.
	sec := tlsSecret("web", "shop", "cert-1")
	sec.Labels = map[string]string{"a": "b"}
	if _, err := client.CoreV1().Secrets("web").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("web").Update(ctx, tlsSecret("web", "shop", "cert-2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web/shop")
	if len(changes) != 0 {
		t.Errorf("the label change signalled a change")
	}
	if cert, _, _ := s.Secret("web", "shop"); string(cert) != "cert-2" {
		t.Errorf("cert %q after the update", cert)
	}
	if err := client.CoreV1().Secrets("web").Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web/shop")
	if _, _, ok := s.Secret("web", "shop"); ok {
		t.Error("deleted Secret still served")
	}
}

// A Secret holding only a CA ("NAME-cacert") signals when its CA or CRL
// appears or changes, and its data is served for the CA lookup.
func TestSecretsCA(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s, _, next := runSecrets(t, SecretsOptions{Client: kclienttest.Kube(client)}, false)
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "shop-cacert"}, Data: map[string][]byte{"ca.crt": []byte("ca-1")}}
	if _, err := client.CoreV1().Secrets("gw").Create(ctx, ca, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("gw/shop-cacert")
	ca = ca.DeepCopy()
	ca.Data["ca.crl"] = []byte("crl-1")
	if _, err := client.CoreV1().Secrets("gw").Update(ctx, ca, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("gw/shop-cacert")
	if d, ok := s.SecretData("gw", "shop-cacert"); !ok || string(d["ca.crt"]) != "ca-1" || string(d["ca.crl"]) != "crl-1" {
		t.Errorf("data %v %v", d, ok)
	}
	if _, _, ok := s.Secret("gw", "shop-cacert"); ok {
		t.Error("a CA-only Secret is not a certificate")
	}
}
