# Wayfinder. `make help` lists every target with a line on what it does;
# `make` alone builds. `make run` serves the bundled samples; `make test` runs
# every test (what CI runs, through .ci/run).
#
# A target's description is the `## ` comment on its rule line: `make help`
# prints those, so a new target gets one there.
GO        ?= go
BIN       := bin
CONFIG_DIR ?= manifests/samples
TEST_FLAGS ?= -count=1
# Tests run with the race detector unless RACE= is given.
RACE      ?= -race
# What `make test` makes first for the Kubernetes tests (see kube-deps below).
KUBE_DEPS ?= kube-deps
KUBE_APISERVER_ENSURE := tools/kube-apiserver/ensure.sh

.PHONY: all help build run test test-short vet lint staticcheck fmt golden docs fuzz soak docker clean kube-deps crds gateway-api-crds bench bench-kube conformance

all: build ## Build both binaries (the default goal)

help: ## List the targets with what each does
	@echo 'Usage: make [TARGET] [VAR=value ...]   (no target: build)'
	@echo
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-17s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@echo
	@echo 'Variables, with defaults: CONFIG_DIR=$(CONFIG_DIR) TEST_FLAGS=$(TEST_FLAGS) RACE=$(RACE)'
	@echo '  KUBE_DEPS=$(KUBE_DEPS) FUZZTIME=$(FUZZTIME) SOAKTIME=$(SOAKTIME) BENCH_OUT=$(BENCH_OUT)'
	@echo '  BENCH_FLAGS, BENCH_KUBE_FLAGS (empty); see the comments in the Makefile.'

# VERSION is stamped into both binaries (`wayfinder version`, /debug/version).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/wayfinder-dev/wayfinder/pkg/version.version=$(VERSION)

build: ## Build bin/pilot-discovery and bin/wayfinder, stamped with VERSION
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/pilot-discovery ./pilot/cmd/pilot-discovery
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/wayfinder ./pilot/cmd/wayfinder

run: build ## Build, then serve CONFIG_DIR (gRPC 127.0.0.1:15010, HTTP :15014)
	$(BIN)/pilot-discovery discovery --config-dir $(CONFIG_DIR) --grpc-addr 127.0.0.1:15010 --http-addr 127.0.0.1:15014

# `test` first lints (see lint) and makes what the Kubernetes tests need
# (see kube-deps); give KUBE_DEPS= to skip that, and those tests skip
# themselves outside CI. The Helm chart's test is its own module
# (tests/helm) so that Helm's dependencies stay out of the main one, and so
# is the benchmark's chart (tools/benchchart, the plotting library's); they
# run after the main suite.
test: lint $(KUBE_DEPS) ## lint, kube-deps, then every test with -race, all three modules (CI)
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" $(GO) test $(RACE) $(TEST_FLAGS) ./...
	cd tests/helm && KUBE_APISERVER="$${KUBE_APISERVER:-$$(../../$(KUBE_APISERVER_ENSURE) --path)}" $(GO) test $(RACE) $(TEST_FLAGS) ./...
	cd tools/benchchart && $(GO) test $(RACE) $(TEST_FLAGS) ./...

# `conformance`: the Gateway API conformance suite (tests/conformance, the
# gateway-api version in go.mod) against a real API server, every test it
# can run here (the expected failures too), and its ConformanceReport
# written to CONFORMANCE_REPORT; see docs/conformance.md. `make test` runs
# the same suite without the expected failures and without a report. The
# run fails while an expected failure fails (the report is written anyway)
# and when one passes (it must leave the list).
CONFORMANCE_REPORT ?= docs/conformance/report-$(shell $(GO) list -m -f '{{.Version}}' sigs.k8s.io/gateway-api/conformance).yaml
conformance: $(KUBE_DEPS) ## Gateway API conformance suite; its report into CONFORMANCE_REPORT (docs/conformance/)
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" WAYFINDER_VERSION=$(VERSION) \
	  $(GO) test ./tests/conformance -run '^TestConformance$$' -count=1 -v -timeout 30m \
	  -args -conformance.report=$(CURDIR)/$(CONFORMANCE_REPORT)

# `test-short`: the main module's tests with -short, no race detector and
# no vet first; a quick check, not what CI runs.
test-short: ## Quick check: go test -short, main module only, no -race, no vet
	$(GO) test -short $(TEST_FLAGS) ./...

# The Go files vet checks and fmt rewrites: the tracked ones (all modules),
# or every .go file outside a git checkout.
GO_FILES = $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')
# The modules besides the main one, each with its own go.mod.
SUB_MODULES := tests/helm tools/benchchart

# `vet` fails on any file gofmt would change (`make fmt` fixes them), then
# runs go vet on every module.
vet: ## Fail on unformatted Go files (see fmt), then go vet every module
	@out=$$(gofmt -l $(GO_FILES)); \
	  if [ -n "$$out" ]; then echo "gofmt needed (make fmt rewrites them):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	for m in $(SUB_MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

# `lint` is vet, then staticcheck (staticcheck.conf says which checks and
# why) on every module. staticcheck is pinned: it is built once from the Go
# module proxy into bin/staticcheck-VERSION/ (a minute or two cold; a
# different version builds beside it).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/$(BIN)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
lint: vet staticcheck ## vet (gofmt check, go vet), then staticcheck, every module
	$(STATICCHECK) ./...
	for m in $(SUB_MODULES); do (cd $$m && $(STATICCHECK) ./...) || exit 1; done

staticcheck: $(STATICCHECK) ## Build the pinned staticcheck into bin/ (lint does when missing)
$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# `fmt` rewrites, with gofmt -w, the files vet checks.
fmt: ## gofmt -w the tracked Go files (the files vet checks)
	@files="$(GO_FILES)"; [ -z "$$files" ] || gofmt -w $$files

# Regenerate every golden file after an intended output change, then read
# `git diff`. Each package below has golden tests with its own -update flag
# (pkg/test/golden: testdata/<case>.in.yaml -> <case>.golden.yaml; goldens
# whose input is gone are deleted):
#   networking/core, networking/grpcgen   TestGolden: the xDS translations
#   config/analysis                       TestGolden: folder <case>/ -> <case>.golden.txt
#                                         findings (golden.RunDirs)
#   config/gatewayapi                     TestGolden, TestGoldenConformance
#                                         (testdata/conformance)
#   config/kube/gatewaydeploy             TestRenderGolden: the deployer's objects
#   networking/telemetry                  TestGolden: access loggers and tracing
#   pkg/config/mesh                       TestGolden: mesh config merged onto defaults
# A new golden test goes into GOLDEN_PKGS and the -run pattern.
GOLDEN_PKGS := ./pilot/pkg/networking/core ./pilot/pkg/networking/grpcgen ./pilot/pkg/config/analysis \
  ./pilot/pkg/config/gatewayapi ./pilot/pkg/config/kube/gatewaydeploy ./pilot/pkg/networking/telemetry \
  ./pkg/config/mesh
golden: ## Regenerate every golden file (every golden package, -update)
	$(GO) test $(GOLDEN_PKGS) -run '^(TestGolden|TestGoldenConformance|TestRenderGolden)$$' -update

# The flag references in docs/running.md and docs/operating.md are rendered
# from the commands (pkg/flagref); `make test` fails when they differ.
docs: ## Regenerate the flag references in docs/ from the commands
	$(GO) test ./pilot/cmd/pilot-discovery/app ./pilot/cmd/wayfinder/app -run '^TestFlagReference' -update

# Each fuzzer runs FUZZTIME: the parser and validators, the fast YAML
# subset decoder against the full YAML parser, ADS request
# handling (SotW and delta sequences over a real gRPC stream), the
# request codec that shares name lists, and every translator fed random
# valid configurations.
FUZZTIME ?= 30s
fuzz: ## Run each fuzzer for FUZZTIME (30s), one after another
	$(GO) test ./pkg/config/manifest -run '^$$' -fuzz FuzzParseValidate -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/config/manifest -run '^$$' -fuzz '^FuzzTreeSpecMatchesJSON$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/blockyaml -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pilot/pkg/xds -run '^$$' -fuzz '^FuzzADSRequests$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pilot/pkg/xds/wire -run '^$$' -fuzz '^FuzzCodecDecodesAsProtobuf$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pilot/pkg/networking/core -run '^$$' -fuzz '^FuzzTranslateGenerated$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s

# The soak (tests/soak): SOAKTIME of mixed churn against the real binary in
# Kubernetes mode; goroutines, fds and memory must be flat at the end.
# `make test` runs its 40-second form.
SOAKTIME ?= 30m
soak: $(KUBE_DEPS) ## SOAKTIME (30m) of mixed churn, Kubernetes mode (tests/soak)
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" $(GO) test ./tests/soak -run TestSoakMixedChurn -count=1 -v -timeout 0 \
	  -args -soak.duration $(SOAKTIME) -soak.gateways 20 -soak.services 50 -soak.virtualservices 20 -soak.interval 250ms

docker: ## Build the image wayfinder/pilot-discovery:dev
	docker build -t wayfinder/pilot-discovery:dev .

clean: ## Remove bin/
	rm -rf $(BIN)

# The Kubernetes tests (tests/kube/...) run a real etcd and kube-apiserver on
# loopback. kube-deps installs etcd from Debian's etcd-server when it is
# missing and we are root (otherwise it says what to run, and the Kubernetes
# tests skip themselves), and builds kube-apiserver from source into
# $${XDG_CACHE_HOME:-~/.cache}/wayfinder once (about 6 minutes cold on an idle
# 2-core machine; instant afterwards).
kube-deps: ## Get etcd and kube-apiserver for the Kubernetes tests (built once, cached)
	@etcd=$$(tools/kube-apiserver/ensure-etcd.sh) && \
	  if [ -n "$$etcd" ]; then GO=$(GO) $(KUBE_APISERVER_ENSURE) >/dev/null; \
	  else echo "kube-deps: not building kube-apiserver until etcd is installed" >&2; fi

# Refresh manifests/crds from the istio.io/api version in go.mod: only the
# Istio kinds Wayfinder reads (networking.istio.io, EnvoyFilter included, and
# telemetry.istio.io in istio-networking.yaml, which keeps its older name; security.istio.io in
# istio-security.yaml).
ISTIO_CRD_KINDS := gateways virtualservices destinationrules serviceentries envoyfilters telemetries
ISTIO_SECURITY_CRD_KINDS := requestauthentications authorizationpolicies

crds: ## Refresh manifests/crds/istio-networking.yaml and istio-security.yaml from go.mod's istio.io/api
	@dir=$$($(GO) list -m -f '{{.Dir}}' istio.io/api) && ver=$$($(GO) list -m -f '{{.Version}}' istio.io/api) && \
	  manifests/refresh-crds.sh "$$dir/kubernetes/customresourcedefinitions.gen.yaml" "istio.io/api@$$ver" \
	    $(ISTIO_CRD_KINDS) > manifests/crds/istio-networking.yaml.tmp && \
	  mv manifests/crds/istio-networking.yaml.tmp manifests/crds/istio-networking.yaml && \
	  manifests/refresh-crds.sh "$$dir/kubernetes/customresourcedefinitions.gen.yaml" "istio.io/api@$$ver" \
	    $(ISTIO_SECURITY_CRD_KINDS) > manifests/crds/istio-security.yaml.tmp && \
	  mv manifests/crds/istio-security.yaml.tmp manifests/crds/istio-security.yaml
	@cat manifests/crds/istio-networking.yaml manifests/crds/istio-security.yaml | grep -c '^kind: CustomResourceDefinition'

# Refresh manifests/crds/gateway-api from the sigs.k8s.io/gateway-api version
# in go.mod: the module's standard-channel CRDs of the kinds Wayfinder reads,
# copied unchanged (each carries its bundle-version and channel annotations),
# and the experimental-channel CRDs of the same kinds into
# manifests/crds/gateway-api-experimental; then regenerate the schemas file
# mode checks them against (pkg/config/manifest/gatewayapi_schemas.json).
# File mode checks against the experimental channel's schemas: they are a
# superset of the standard ones, and the experimental HTTPRoute fields
# Wayfinder serves (retry, sessionPersistence) are accepted in a file as on a
# cluster that installed the experimental CRDs.
GATEWAY_API_CRD_KINDS := gatewayclasses gateways httproutes grpcroutes referencegrants tlsroutes tcproutes \
  listenersets backendtlspolicies

gateway-api-crds: ## Refresh manifests/crds/gateway-api{,-experimental} from go.mod's gateway-api
	@dir=$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api) && \
	  for ch in standard experimental; do \
	    out=manifests/crds/gateway-api; [ $$ch = standard ] || out=$$out-$$ch; \
	    for k in $(GATEWAY_API_CRD_KINDS); do \
	      cp "$$dir/config/crd/$$ch/gateway.networking.k8s.io_$$k.yaml" $$out/ && \
	      chmod 644 $$out/gateway.networking.k8s.io_$$k.yaml || exit 1; \
	    done; \
	  done
	@cat manifests/crds/gateway-api/*.yaml | grep -c '^kind: CustomResourceDefinition'
	$(GO) generate ./pkg/config/manifest

# The issue-6 benchmark matrix (services x gateways) against a fresh
# pilot-discovery and the floor server; results under bench-results/.
# File mode only; the Kubernetes-mode benchmark is bench-kube (run both with
# `make bench bench-kube`).
# e.g. make bench BENCH_FLAGS=--quick, or BENCH_FLAGS='--cases 1000x500 --delta'.
BENCH_OUT   ?= bench-results
BENCH_FLAGS ?=
bench: ## File-mode benchmark matrix into BENCH_OUT (bench-results/)
	$(GO) run ./tools/bench --out $(BENCH_OUT) $(BENCH_FLAGS)

# The Kubernetes-mode benchmark (issue 14): per case a real etcd and
# kube-apiserver on loopback (as the Kubernetes tests; see kube-deps), the
# workload written into it, pilot-discovery in Kubernetes mode and G
# simulated gateways; then endpoint churn at BENCH_KUBE_FLAGS' rates.
# Results in $(BENCH_OUT)/kube/kube-results.md. Then the Gateway API
# route-propagation cases (5,000 HTTPRoutes and 2,500 ListenerSets x 16
# routes, 100 and 500 proxies; --route-cases) into route-results.md.
# Separate from `make bench` (it needs kube-deps and takes much longer).
# Shorter churn, or the route cases alone, e.g.:
# make bench-kube BENCH_KUBE_FLAGS='--kube-cases 1000x500 --churn-duration 60s --route-cases ""'
# make bench-kube BENCH_KUBE_FLAGS="--kube-cases '' --route-cases hr5000x100"
BENCH_KUBE_FLAGS ?=
bench-kube: $(KUBE_DEPS) ## Kubernetes-mode benchmark with endpoint churn into BENCH_OUT/kube
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" \
	  $(GO) run ./tools/bench --kube --out $(BENCH_OUT)/kube $(BENCH_KUBE_FLAGS)
