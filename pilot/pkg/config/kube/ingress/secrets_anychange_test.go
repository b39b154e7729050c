package ingress

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// OnAnyChange hears of every Secret added, deleted, or whose type or data
// change, a Secret holding no certificate included (the Gateway API
// resolves certificateRefs against the Secret itself), and not of a
// metadata-only update; Get reads the cache.
func TestSecretsOnAnyChange(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s, changes, next := runSecrets(t, SecretsOptions{Client: kclienttest.Kube(client), Namespaces: []string{"web"}}, true)
	hello := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "site"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("Hello world")}}
	if _, err := client.CoreV1().Secrets("web").Create(ctx, hello, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web/site")
	if got := s.Get("web", "site"); got == nil || string(got.Data["tls.crt"]) != "Hello world" {
		t.Errorf("Get: %v", got)
	}
	if s.Get("web", "missing") != nil || s.Get("other", "site") != nil {
		t.Error("Get found a Secret that is not there")
	}
	labelled := hello.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	if _, err := client.CoreV1().Secrets("web").Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixed := labelled.DeepCopy()
	fixed.Data["tls.key"] = []byte("key")
	if _, err := client.CoreV1().Secrets("web").Update(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web/site")
	if len(changes) != 0 {
		t.Error("the label change signalled a change")
	}
	if err := client.CoreV1().Secrets("web").Delete(ctx, "site", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web/site")
}
