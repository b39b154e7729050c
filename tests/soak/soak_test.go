package soak

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// The short form (the defaults) runs in `make test`; `make soak` gives
// -soak.duration=30m and more gateways.
var (
	soakDuration = flag.Duration("soak.duration", 30*time.Second, "how long the churn runs after warm-up")
	soakGateways = flag.Int("soak.gateways", 6, "gateways connected at once")
	soakServices = flag.Int("soak.services", 20, "Services, each with one EndpointSlice")
	soakRoutes   = flag.Int("soak.virtualservices", 10, "VirtualServices, each routing one host to one Service")
	soakReport   = flag.Duration("soak.report", time.Minute, "how often the figures are logged during the run")
	soakProfiles = flag.String("soak.profiles", "", "folder to write the server's heap profiles and goroutine dumps into, after warm-up and at the end")
	soakInterval = flag.Duration("soak.interval", 0, "shortest time between the starts of two rounds (0: each round starts once the last converged)")
)

// warmupRounds run before the baseline is taken, so that everything built
// once (informer caches, the first reconnects, pools) is counted in it.
const warmupRounds = 10

// waitTimeout bounds every wait for convergence or for the binary.
const waitTimeout = 60 * time.Second

// settleTimeout bounds how long the end figures may take to come back
// within bounds after the churn stopped (closed streams unwinding).
const settleTimeout = 30 * time.Second

var cluster apiserver.Shared

func TestMain(m *testing.M) {
	flag.Parse()
	code := cluster.Run(m)
	serverenv.RemoveBinaryOnce()
	os.Exit(code)
}

// fleet is the connected gateways, reconnected one by one and all at once.
type fleet struct {
	t      *testing.T
	dial   func(i int) (*adsc.Client, error)
	gws    []*adsc.Client
	nacks  int // NACKs of the gateways already closed
	errors []string
	dials  int
}

func (f *fleet) connect(i int) {
	f.t.Helper()
	c, err := f.dial(i)
	if err != nil {
		f.t.Fatalf("gateway %d: %v", i, err)
	}
	f.gws[i] = c
	f.dials++
}

// reconnect closes gateway i and dials it again under the same pod name,
// as a restarted Envoy does.
func (f *fleet) reconnect(i int) {
	f.t.Helper()
	f.account(f.gws[i])
	f.gws[i].Close()
	f.connect(i)
}

// storm closes every gateway and redials them all concurrently.
func (f *fleet) storm() {
	f.t.Helper()
	for _, c := range f.gws {
		f.account(c)
		c.Close()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.gws))
	for i := range f.gws {
		wg.Go(func() { f.gws[i], errs[i] = f.dial(i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			f.t.Fatalf("gateway %d in a reconnect storm: %v", i, err)
		}
	}
	f.dials += len(f.gws)
}

// account adds c's NACKs and standing errors to the fleet's.
func (f *fleet) account(c *adsc.Client) {
	for typ, ts := range c.State().Types {
		f.nacks += ts.NACKs
		if ts.Error != "" {
			f.errors = append(f.errors, adsc.ShortName(typ)+": "+ts.Error)
		}
	}
}

// converge waits until every gateway holds w's config.
func (f *fleet) converge(w *workload, what string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for i, c := range f.gws {
		if err := c.WaitFor(ctx, w.converged); err != nil {
			f.t.Fatalf("%s: gateway %d did not converge: %v: %s", what, i, err, w.mismatch(c.State()))
		}
	}
}

// The soak: mixed churn against the real binary in Kubernetes mode, the
// gateways on the secure port with real ServiceAccount tokens. Each round
// changes two Services' endpoints, one VirtualService's route, deletes or
// recreates the TLS Secret, reconnects one gateway (every 25th round all
// of them at once), and waits until every gateway holds the new config.
func TestSoakMixedChurn(t *testing.T) {
	c := cluster.Get(t)
	ns := c.Namespace(t, "soak")
	bin := buildBinary(t)
	istio, err := istioclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	certs := "../../pilot/pkg/networking/listener/testdata/"
	cert, err := os.ReadFile(certs + "cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(certs + "key.pem")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w := &workload{kube: c.Clientset(), istio: istio, ns: ns, cert: cert, key: key,
		endpoints: make([]int, *soakServices), routes: make([]int, *soakRoutes)}
	if err := w.setup(ctx); err != nil {
		t.Fatal(err)
	}

	b := serverenv.StartBinary(t, bin, "--kubeconfig", c.Kubeconfig, "--watch-namespaces", ns,
		"--pod-namespace", ns, "--pod-name", "soak-0", "--disable-ingress")
	secure, _ := b.WaitLogFunc("serving", func(m map[string]any) bool { return m["msg"] == "serving" }, waitTimeout)["secureGrpc"].(string)
	if secure == "" {
		t.Fatal("the binary logged no secure ADS address")
	}
	b.WaitLog("config synced and first push computed", waitTimeout)
	cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, security.RootCertConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data[security.RootCertKey])) {
		t.Fatal("root-cert.pem holds no certificate")
	}
	tlsConfig := &tls.Config{RootCAs: pool, ServerName: "pilot-discovery." + ns + ".svc"}
	lifetime := 2*time.Hour + 2**soakDuration
	token := c.Token(t, ns, "ingressgateway", []string{"wayfinder"}, lifetime)
	// The gateway may list its namespace's Secrets, as Istio's gateway
	// chart grants; without it the TLS Secret is not sent to it.
	c.AllowSecretReading(t, ns, "ingressgateway")
	proc := process{pid: b.PID(), httpAddr: b.HTTPAddr, adminToken: c.Token(t, ns, "wayfinder-debug", nil, lifetime)}

	f := &fleet{t: t, gws: make([]*adsc.Client, *soakGateways), dial: func(i int) (*adsc.Client, error) {
		dctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		return adsc.Dial(dctx, adsc.Config{Address: secure, TLS: tlsConfig, Token: token, Node: adsc.IstioNode(adsc.NodeOptions{
			IP: "127.0.0.1", PodName: fmt.Sprintf("gw-%d", i), Namespace: ns, Labels: map[string]string{"istio": "ingressgateway"},
		})})
	}}
	for i := range f.gws {
		f.connect(i)
	}
	t.Cleanup(func() {
		for _, g := range f.gws {
			if g != nil {
				g.Close()
			}
		}
	})
	f.converge(w, "initial config")

	changes := 0
	round := func(r int) {
		t.Helper()
		for _, svc := range []int{r % len(w.endpoints), (r*7 + 3) % len(w.endpoints)} {
			if err := w.setEndpoints(ctx, svc, 1+w.endpoints[svc]%3); err != nil {
				t.Fatalf("round %d: endpoints of svc-%d: %v", r, svc, err)
			}
			changes++
		}
		vs := r % len(w.routes)
		if err := w.setRoute(ctx, vs, (w.routes[vs]+1)%len(w.endpoints)); err != nil {
			t.Fatalf("round %d: VirtualService app-%d: %v", r, vs, err)
		}
		if err := w.setSecret(ctx, !w.secret); err != nil {
			t.Fatalf("round %d: Secret: %v", r, err)
		}
		changes += 2
		if r%25 == 24 {
			f.storm()
		} else {
			f.reconnect(r % len(f.gws))
		}
		f.converge(w, fmt.Sprintf("round %d", r))
	}

	r := 0
	for ; r < warmupRounds; r++ {
		round(r)
	}
	base, err := proc.sample()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after warm-up (%d rounds): %s", warmupRounds, base)
	if *soakProfiles != "" {
		if err := proc.saveProfiles(*soakProfiles, "base"); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	nextReport := start.Add(*soakReport)
	var pace <-chan time.Time
	if *soakInterval > 0 {
		tick := time.NewTicker(*soakInterval)
		defer tick.Stop()
		pace = tick.C
	}
	for time.Since(start) < *soakDuration {
		if pace != nil {
			<-pace
		}
		round(r)
		r++
		if now := time.Now(); now.After(nextReport) {
			nextReport = now.Add(*soakReport)
			if fig, err := proc.sample(); err == nil {
				t.Logf("%s: round %d: %s", now.Sub(start).Round(time.Second), r, fig)
			}
		}
	}
	elapsed := time.Since(start)
	if !w.secret {
		if err := w.setSecret(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	f.converge(w, "the final config")

	for _, g := range f.gws {
		f.account(g)
	}
	if f.nacks != 0 || len(f.errors) != 0 {
		t.Errorf("gateways NACKed %d responses: %s", f.nacks, strings.Join(f.errors, "; "))
	}
	// The server's side: no NACK counted, no stream closed for not
	// reading or for a limit, and exactly the fleet connected (closed
	// streams forgotten).
	m, err := proc.metrics("pilot_total_xds_rejects", "pilot_xds_write_timeout", "wayfinder_xds_limit_exceeded_total", "pilot_xds")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pilot_total_xds_rejects", "pilot_xds_write_timeout", "wayfinder_xds_limit_exceeded_total"} {
		if m[name] != 0 {
			t.Errorf("server counted %s = %v, want 0", name, m[name])
		}
	}
	if got := int(m["pilot_xds"]); got != len(f.gws) {
		t.Errorf("server reports %d proxies connected, want %d", got, len(f.gws))
	}
	if errs := errorLines(b.LogText()); len(errs) != 0 {
		t.Errorf("pilot-discovery logged %d errors, first: %s", len(errs), errs[0])
	}

	// Streams closed in the last round may still be unwinding: sample
	// until the figures are within bounds, failing with the last sample.
	var end figures
	var over []string
	deadline := time.Now().Add(settleTimeout)
	for {
		if end, err = proc.sample(); err != nil {
			t.Fatal(err)
		}
		if over = defaultBounds.exceeded(base, end); len(over) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second) // polling a process from outside: there is no event to wait on
	}
	t.Logf("after %s of churn (%d rounds, %d object changes, %d gateway connections): %s", elapsed.Round(time.Second), r-warmupRounds, changes, f.dials, end)
	if *soakProfiles != "" {
		if err := proc.saveProfiles(*soakProfiles, "end"); err != nil {
			t.Error(err)
		}
	}
	if len(over) != 0 {
		t.Errorf("not flat after the churn: %s", strings.Join(over, "; "))
	}
}

// errorLines are the log lines at level ERROR.
func errorLines(log string) []string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

// buildBinary is pilot-discovery, built once, after the cluster is known
// to be available, so a run that skips builds nothing.
func buildBinary(t *testing.T) string { return serverenv.BinaryOnce(t) }
