package conformance

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewaydeploy"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

var (
	reportPath = flag.String("conformance.report", "",
		"write the suite's ConformanceReport (YAML) here, and run the expected failures too (make conformance)")
	runOnly = flag.String("conformance.run", "", "run only this conformance test (its ShortName), for debugging")
)

// The profiles Wayfinder claims.
var profiles = []suite.ConformanceProfileName{
	suite.GatewayHTTPConformanceProfileName,
	suite.GatewayTLSConformanceProfileName,
	suite.GatewayGRPCConformanceProfileName,
	suite.GatewayTCPConformanceProfileName,
}

// gatewayClass is the GatewayClass the suite's Gateways name.
const gatewayClass = "wayfinder"

// implementation is who the report is about.
var implementation = confv1.Implementation{
	Organization: "wayfinder-dev",
	Project:      "wayfinder",
	URL:          "https://github.com/wayfinder-dev/wayfinder",
	Contact:      []string{"https://github.com/wayfinder-dev/wayfinder/issues"},
}

// timeouts bound the suite's waits. Status converges here in well under a
// second; these leave room for a loaded 2-core machine while keeping an
// unexpected failure from costing minutes. Requests are never sent.
func timeouts() config.TimeoutConfig {
	c := config.DefaultTimeoutConfig()
	const status = 30 * time.Second
	c.GatewayMustHaveAddress, c.GatewayMustHaveCondition, c.GatewayStatusMustHaveListeners = status, status, status
	c.GatewayListenersMustHaveConditions, c.ListenerSetMustHaveCondition, c.ListenerSetListenersMustHaveConditions = status, status, status
	c.GWCMustBeAccepted, c.HTTPRouteMustNotHaveParents, c.HTTPRouteMustHaveCondition = status, status, status
	c.TLSRouteMustHaveCondition, c.TCPRouteMustHaveCondition, c.UDPRouteMustHaveCondition = status, status, status
	c.RouteMustHaveParents, c.LatestObservedGenerationSet, c.DefaultTestTimeout = status, status, status
	c.NamespacesMustBeReady = 2 * time.Minute
	c.MaxTimeToConsistency, c.RequestTimeout = 5*time.Second, time.Second
	// A test waits on several conditions one after another, each polled:
	// the default 100 ms would add most of a test's time here.
	c.DefaultPollInterval = 25 * time.Millisecond
	return c
}

// TestConformance runs the Gateway API conformance suite against
// Wayfinder in Kubernetes mode, as the package comment describes.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and runs the conformance suite")
	}
	ctrllog.SetLogger(logr.Discard())
	c := apiserver.Start(t, apiserver.Options{SkipGatewayAPICRDs: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	cl, err := client.New(c.RESTConfig(), client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	installExperimentalCRDs(ctx, t, c, cl)
	kube := c.Clientset()

	// The stand-in for the controllers and kubelets, started before
	// anything creates Deployments.
	si := newStandIn(kube, serverenv.Logger(t, slog.LevelInfo))
	siDone := make(chan error, 1)
	go func() { siDone <- si.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-siDone; err != nil {
			t.Errorf("stand-in: %v", err)
		}
	})

	if err := cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: gatewayClass},
		Spec: gwv1.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}); err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "wayfinder")
	serverenv.StartServer(t, bootstrap.Options{
		Kubeconfig: c.Kubeconfig, PodName: "wayfinder-0", PodNamespace: ns,
		Security:      bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"},
		GatewayDeploy: gatewaydeploy.Options{Image: "example.invalid/envoy:conformance"},
		Logger:        serverenv.Logger(t, slog.LevelWarn),
	})

	gate := newTrafficGate()
	runAll := *reportPath != ""
	opts := suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     gatewayClass,
			Mode:                 "default",
			Implementation:       implementation,
			ConformanceProfiles:  profiles,
			CleanupBaseResources: false, // the cluster is thrown away; nothing would finish a namespace's deletion
			CleanupTestResources: true,
			// One at a time: several tests the suite marks Parallel share
			// objects (the ReferenceGrant tests grant one Secret to every
			// Gateway of a namespace while another expects it refused).
			DisableParallelTests: true,
			TimeoutConfig:        timeouts(),
			SkipTests:            skipList(runAll),
			RunTest:              *runOnly,
		},
		Client:          cl,
		ClientOptions:   client.Options{Scheme: cl.Scheme()},
		Clientset:       kube,
		RestConfig:      c.RESTConfig(),
		RoundTripper:    gate,
		GRPCClient:      gate,
		WebSocketDialer: gate,
		ManifestFS:      []fs.FS{&conformance.Manifests},
	}
	opts.Implementation.Version = implementationVersion()
	opts.SupportedFeatures = supportedFeatures(ctx, t, cl)

	s, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatal(err)
	}
	results := newResults()
	s.Hook = func(t *testing.T, test suite.ConformanceTest, _ *suite.ConformanceTestSuite) {
		results.record(test.ShortName, t)
	}
	all := make([]suite.ConformanceTest, 0, len(tests.ConformanceTests))
	for _, test := range tests.ConformanceTests {
		all = append(all, gated(test, gate))
	}
	checkNames(t, all)

	// Registered before Run's own cleanup, so they run after it, when the
	// suite is no longer running.
	t.Cleanup(func() {
		results.summarize(t, gate, runAll)
		if *reportPath != "" {
			writeReport(t, s, *reportPath)
		}
	})
	s.Setup(t, all)
	if err := s.Run(t, all); err != nil {
		t.Fatal(err)
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		gwv1.Install, gwv1beta1.Install, gwv1alpha2.Install, gwv1alpha3.Install, xv1alpha1.Install,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// installExperimentalCRDs applies the experimental-channel CRDs of the
// gateway-api module in go.mod (the suite wants one channel and version
// across every Gateway API CRD, and the experimental one carries the
// fields and kinds it tests), and waits until they are Established.
func installExperimentalCRDs(ctx context.Context, t *testing.T, c *apiserver.Cluster, cl client.Client) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Fatalf("finding the gateway-api module (go list -m): %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "experimental")
	files, err := filepath.Glob(filepath.Join(dir, "gateway.networking.*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	var names []string
	for _, f := range files {
		if strings.Contains(filepath.Base(f), "_vap_") { // an admission policy, not a CRD
			continue
		}
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := c.Apply(ctx, apiserver.ApplyOptions{}, doc)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range objs {
			names = append(names, o.GetName())
		}
	}
	for _, name := range names {
		poll.Seen(t, "CRD "+name+" Established", func() (string, bool) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := cl.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return err.Error(), false
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return "", true
				}
			}
			return fmt.Sprint(crd.Status.Conditions), false
		}, poll.Timeout(time.Minute), poll.Interval(50*time.Millisecond))
	}
	// The client maps kinds to resources lazily; make it see the new ones.
	if r, ok := cl.RESTMapper().(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
}

// supportedFeatures is what the suite is told Wayfinder supports: nothing,
// so that the suite infers it from the GatewayClass status
// (status.supportedFeatures, which Wayfinder writes from its one list); the
// same list given explicitly with -conformance.run, where the suite does not
// infer. A GatewayClass that lists none fails the run.
func supportedFeatures(ctx context.Context, t *testing.T, cl client.Client) []features.FeatureName {
	t.Helper()
	gwc := poll.Value(t, "GatewayClass "+gatewayClass+" Accepted, with supportedFeatures", func() (*gwv1.GatewayClass, error) {
		var g gwv1.GatewayClass
		err := cl.Get(ctx, client.ObjectKey{Name: gatewayClass}, &g)
		return &g, err
	}, func(g *gwv1.GatewayClass) bool {
		return meta.IsStatusConditionTrue(g.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)) &&
			len(g.Status.SupportedFeatures) > 0
	}, poll.Timeout(time.Minute), poll.Interval(50*time.Millisecond))
	var inStatus []features.FeatureName
	for _, f := range gwc.Status.SupportedFeatures {
		inStatus = append(inStatus, features.FeatureName(f.Name))
	}
	t.Logf("supported features, from the GatewayClass status: %v", inStatus)
	if *runOnly != "" {
		return inStatus
	}
	return nil
}

// skipList is what the suite skips: the tests that cannot run here and,
// unless every test is to run, the expected failures.
func skipList(runAll bool) []string {
	out := slices.Collect(maps.Keys(skipped))
	if !runAll {
		out = append(out, slices.Collect(maps.Keys(expectedFailures))...)
		out = append(out, slices.Collect(maps.Keys(reportOnly))...)
	}
	sort.Strings(out)
	return out
}

// checkNames fails on an entry of skipped or expectedFailures that names
// no test of the suite (a renamed or removed test).
func checkNames(t *testing.T, all []suite.ConformanceTest) {
	t.Helper()
	known := map[string]bool{}
	for _, test := range all {
		known[test.ShortName] = true
	}
	for _, m := range []map[string]string{skipped, expectedFailures, reportOnly} {
		for name := range m {
			if !known[name] {
				t.Errorf("%s is listed in skips_test.go but is not a test of the suite", name)
			}
		}
	}
}

func implementationVersion() string {
	if v := os.Getenv("WAYFINDER_VERSION"); v != "" {
		return v
	}
	return "dev"
}

// writeReport writes the suite's ConformanceReport as YAML to path.
func writeReport(t *testing.T, s *suite.ConformanceTestSuite, path string) {
	t.Helper()
	report, err := s.Report()
	if err == nil {
		var data []byte
		if data, err = yaml.Marshal(report); err == nil {
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
		}
	}
	if err != nil {
		t.Errorf("conformance report: %v", err)
		return
	}
	t.Logf("conformance report written to %s", path)
}

// results are the outcomes of the suite's tests, as its Hook saw them.
type results struct {
	mu  sync.Mutex
	out map[string]string // test -> passed, failed, skipped
}

func newResults() *results { return &results{out: map[string]string{}} }

func (r *results) record(name string, t *testing.T) {
	res := "passed"
	switch {
	case t.Failed():
		res = "failed"
	case t.Skipped():
		res = "skipped"
	}
	r.mu.Lock()
	r.out[name] = res
	r.mu.Unlock()
}

// summarize logs one line per outcome and, when the expected failures ran,
// fails on each that passed.
func (r *results) summarize(t *testing.T, g *trafficGate, ranExpected bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	cut := map[string]bool{}
	for _, n := range g.cut() {
		cut[n] = true
	}
	var passed, failed, stopped, byName, expected, later, other []string
	for _, name := range slices.Sorted(maps.Keys(r.out)) {
		switch res := r.out[name]; {
		case res == "passed":
			passed = append(passed, name)
			if ranExpected && expectedFailures[name] != "" {
				t.Errorf("%s passes but is listed in expectedFailures (%s): remove it from the list", name, expectedFailures[name])
			}
		case res == "failed":
			failed = append(failed, name)
		case cut[name]:
			stopped = append(stopped, name)
		case skipped[name] != "":
			byName = append(byName, name)
		case expectedFailures[name] != "":
			expected = append(expected, name)
		case reportOnly[name] != "":
			later = append(later, name)
		default:
			other = append(other, name) // features not claimed, or -conformance.run
		}
	}
	t.Logf("passed (%d): %s", len(passed), strings.Join(passed, " "))
	t.Logf("failed (%d): %s", len(failed), strings.Join(failed, " "))
	t.Logf("status passed, stopped at the first request (%d): %s", len(stopped), strings.Join(stopped, " "))
	t.Logf("skipped by name (%d): %s", len(byName), strings.Join(byName, " "))
	t.Logf("expected failures, not run (%d): %s", len(expected), strings.Join(expected, " "))
	t.Logf("run by make conformance only (%d): %s", len(later), strings.Join(later, " "))
	t.Logf("not run: features not claimed (%d)", len(other))
}
