package mesh

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type change struct{ prev, next *Config }

func newTestHolder(t *testing.T) (*Holder, *[]change, *bytes.Buffer) {
	t.Helper()
	var changes []change
	var logs bytes.Buffer
	h := NewHolder(HolderOptions{
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnChange: func(prev, next *Config) { changes = append(changes, change{prev, next}) },
	})
	return h, &changes, &logs
}

// TestHolderKeepsLastGood: a refused update leaves the config in force and
// tells no one; a good one replaces it and is told once.
func TestHolderKeepsLastGood(t *testing.T) {
	h, changes, logs := newTestHolder(t)
	src := ConfigMapSource("istio-system", "istio")
	if h.Current().Source.String() != "defaults" || !h.Current().Mesh.GetEnableTracing() {
		t.Fatalf("a new Holder holds %v", h.Current().Mesh)
	}

	if err := h.Update(src, []byte("accessLogFile: /dev/stdout\nenableTracing: false")); err != nil {
		t.Fatal(err)
	}
	good := h.Current()
	if good.Mesh.GetAccessLogFile() != "/dev/stdout" || good.Mesh.GetEnableTracing() || good.Source != src {
		t.Fatalf("update not in force: %v", good.Mesh)
	}
	if len(*changes) != 1 || (*changes)[0].prev.Source.String() != "defaults" || (*changes)[0].next != good {
		t.Fatalf("changes %v", *changes)
	}

	err := h.Update(src, []byte("accessLogFile: /dev/stderr\naccessLogEncoding: XML"))
	if err == nil || !strings.Contains(err.Error(), "ConfigMap istio-system/istio key mesh: accessLogEncoding:") {
		t.Fatalf("bad update: err %v", err)
	}
	if h.Current() != good {
		t.Errorf("a refused update replaced the config in force: %v", h.Current().Mesh)
	}
	if len(*changes) != 1 {
		t.Errorf("a refused update was told: %v", *changes)
	}
	if !strings.Contains(logs.String(), "mesh config refused; keeping the one in force") {
		t.Errorf("refusal not logged:\n%s", logs)
	}

	// The same content again (a resync, a touch of the file) changes nothing.
	if err := h.Update(src, []byte("enableTracing: false\naccessLogFile: /dev/stdout\n")); err != nil {
		t.Fatal(err)
	}
	if len(*changes) != 1 {
		t.Errorf("an unchanged config was told: %d changes", len(*changes))
	}

	// No data (the key or the ConfigMap gone) is istiod's defaults again.
	if err := h.Update(src, nil); err != nil {
		t.Fatal(err)
	}
	if len(*changes) != 2 || h.Current().Mesh.GetAccessLogFile() != "" || !h.Current().Mesh.GetEnableTracing() {
		t.Errorf("removal: %d changes, %v", len(*changes), h.Current().Mesh)
	}
}

// TestHolderLogsFieldsOnce: each ignored and unknown field is logged the
// first time only, however often the source is re-read.
func TestHolderLogsFieldsOnce(t *testing.T) {
	h, _, logs := newTestHolder(t)
	src := FileSource("mesh.yaml")
	for _, in := range []string{
		"outboundTrafficPolicy: {mode: REGISTRY_ONLY}\nmeshFoo: 1",
		"outboundTrafficPolicy: {mode: ALLOW_ANY}\nmeshFoo: 2\nenableTracing: false",
		"outboundTrafficPolicy: {mode: ALLOW_ANY}\nmeshFoo: 2\ningressClass: nginx",
	} {
		if err := h.Update(src, []byte(in)); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	for line, want := range map[string]int{
		"field=outboundTrafficPolicy": 1,
		"field=meshFoo":               1,
		"field=ingressClass":          1,
	} {
		if n := strings.Count(out, line); n != want {
			t.Errorf("%q logged %d times, want %d:\n%s", line, n, want, out)
		}
	}
}

// TestHolderWarnings: warnings of an accepted config are logged with their
// field.
func TestHolderWarnings(t *testing.T) {
	h, changes, logs := newTestHolder(t)
	err := h.Update(FileSource("mesh.yaml"), []byte("extensionProviders:\n- name: z\n  zipkin: {service: z.ns.svc.cluster.local}"))
	if err != nil {
		t.Fatal(err)
	}
	if len(*changes) != 1 {
		t.Fatalf("%d changes", len(*changes))
	}
	if !strings.Contains(logs.String(), `field=extensionProviders[0].zipkin.port`) {
		t.Errorf("warning not logged with its field:\n%s", logs)
	}
	if _, err := h.Current().Provider("z"); err == nil {
		t.Error("an invalid provider is usable")
	}
}

// TestHolderConcurrentReads: Current may be called while updates run (go
// test -race checks it).
func TestHolderConcurrentReads(t *testing.T) {
	h := NewHolder(HolderOptions{Logger: slog.New(slog.DiscardHandler)})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if h.Current().Mesh == nil {
					t.Error("nil mesh")
					return
				}
			}
		}
	}()
	for i, in := range []string{"enableTracing: false", "bad: [", "accessLogFile: /dev/stdout", ""} {
		err := h.Update(FileSource("mesh.yaml"), []byte(in))
		if (err != nil) != (i == 1) {
			t.Errorf("update %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}
