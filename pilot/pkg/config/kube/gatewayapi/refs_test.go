package gatewayapi_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	kubegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// secretStore stands in for the SDS store's Secret informer.
type secretStore struct {
	mu      sync.Mutex
	secrets map[string]*corev1.Secret
	lookups atomic.Int32
}

func (s *secretStore) get(ns, name string) *corev1.Secret {
	s.lookups.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secrets[ns+"/"+name]
}

func (s *secretStore) set(sec *corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[sec.Namespace+"/"+sec.Name] = sec
}

// drain waits until every task queued on q before it has run.
func drain(t *testing.T, q *queue.Queue) {
	t.Helper()
	done := make(chan struct{})
	q.Push(func() error { close(done); return nil })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("queue not drained within 10s")
	}
}

// A listener's Secret is read through ControllerOptions.Secrets, and the
// first conversion waits for SecretsSynced. SecretChanged converts again
// for a Secret the last conversion looked up, and for no other; a
// ConfigMap a parametersRef names is watched, and its creation converts
// again, while an unrelated ConfigMap's does not.
func TestControllerConvertsAgainOnReferencedSecretsAndConfigMaps(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(webService)
	serve(kube, "gatewayclasses", "gateways", "httproutes")
	client := newClient(t)
	https := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "secure"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners: []gw.Listener{{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType,
			TLS: &gw.ListenerTLSConfig{CertificateRefs: []gw.SecretObjectReference{{Name: "site"}}}}},
	}}
	params := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "params"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
		Infrastructure:   &gw.GatewayInfrastructure{ParametersRef: &gw.LocalParametersReference{Kind: "ConfigMap", Name: "params"}},
	}}
	for _, g := range []*gw.Gateway{https, params} {
		if _, err := client.GatewayV1().Gateways("edge-ns").Create(ctx, g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store := &secretStore{secrets: map[string]*corev1.Secret{}}
	secretsSynced := make(chan struct{})
	q := queue.New(queue.Options{})
	c, err := kubegatewayapi.NewController(kubegatewayapi.ControllerOptions{
		Client: kclienttest.GatewayAPI(client), Kube: kclienttest.Kube(kube), Queue: q,
		Secrets: store.get,
		SecretsSynced: func(ctx context.Context) bool {
			select {
			case <-secretsSynced:
				return true
			case <-ctx.Done():
				return false
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 100)
	h := func(_, cur config.Config, ev model.Event) {
		events <- ev.String() + " " + cur.Kind.String() + " " + cur.Namespace + "/" + cur.Name
	}
	c.RegisterEventHandler(schema.Gateway, h)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(runCtx) })
	wg.Go(func() { c.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	// The first conversion waits for the Secrets.
	select {
	case <-c.Synced():
		t.Fatal("synced before the Secrets were")
	case <-time.After(100 * time.Millisecond):
	}
	if n := store.lookups.Load(); n != 0 {
		t.Fatalf("%d Secret lookups before the Secrets synced", n)
	}
	close(secretsSynced)
	expect(t, events, "add Gateway edge-ns/edge-http-gwapi")
	if g := c.Get(schema.Gateway, "edge-ns", "secure-https-gwapi"); g != nil {
		t.Fatal("the listener is served without its Secret")
	}
	if g := c.Get(schema.Gateway, "edge-ns", "params-http-gwapi"); g != nil {
		t.Fatal("a Gateway whose parametersRef does not exist is served")
	}

	// An unrelated Secret converts nothing.
	drain(t, q)
	before := store.lookups.Load()
	c.SecretChanged("edge-ns", "unrelated")
	c.SecretChanged("other-ns", "site")
	drain(t, q)
	if n := store.lookups.Load(); n != before {
		t.Errorf("an unrelated Secret converted again (%d lookups)", n-before)
	}

	// The referenced one, fixed, is served.
	cert, err := os.ReadFile("../../../networking/listener/testdata/cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("../../../networking/listener/testdata/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	store.set(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "site"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}})
	c.SecretChanged("edge-ns", "site")
	expect(t, events, "add Gateway edge-ns/secure-https-gwapi")

	// An unrelated ConfigMap converts nothing; the referenced one does.
	drain(t, q)
	before = store.lookups.Load()
	if _, err := kube.CoreV1().ConfigMaps("edge-ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps("edge-ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "params"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "add Gateway edge-ns/params-http-gwapi")
	if n := store.lookups.Load() - before; n != 1 {
		t.Errorf("%d conversions after the two ConfigMaps, want 1", n)
	}
}
