# Wayfinder. `make run` serves the bundled samples; `make test` runs every test.
GO        ?= go
BIN       := bin
CONFIG_DIR ?= manifests/samples
TEST_FLAGS ?= -count=1
# Tests run with the race detector unless RACE= is given.
RACE      ?= -race
# What `make test` makes first for the Kubernetes tests (see kube-deps below).
KUBE_DEPS ?= kube-deps
KUBE_APISERVER_ENSURE := tools/kube-apiserver/ensure.sh

.PHONY: all build run test test-short vet fmt golden fuzz soak docker clean kube-deps crds gateway-api-crds

all: build

# VERSION is stamped into both binaries (`wayfinder version`, /debug/version).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/wayfinder-dev/wayfinder/pkg/version.version=$(VERSION)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/pilot-discovery ./pilot/cmd/pilot-discovery
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/wayfinder ./pilot/cmd/wayfinder

run: build
	$(BIN)/pilot-discovery discovery --config-dir $(CONFIG_DIR) --grpc-addr 127.0.0.1:15010 --http-addr 127.0.0.1:15014

# `test` first makes what the Kubernetes tests need (see kube-deps); give
# KUBE_DEPS= to skip that, and those tests skip themselves outside CI.
# The Helm chart's test is its own module (tests/helm) so that Helm's
# dependencies stay out of the main one; it runs after the main suite.
test: vet $(KUBE_DEPS)
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" $(GO) test $(RACE) $(TEST_FLAGS) ./...
	cd tests/helm && KUBE_APISERVER="$${KUBE_APISERVER:-$$(../../$(KUBE_APISERVER_ENSURE) --path)}" $(GO) test $(RACE) $(TEST_FLAGS) ./...

test-short:
	$(GO) test -short $(TEST_FLAGS) ./...

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd tests/helm && $(GO) vet ./...

# Regenerate the translation golden files after an intended output change.
golden:
	$(GO) test ./pilot/pkg/networking/core ./pilot/pkg/networking/grpcgen ./pilot/pkg/config/analysis ./pilot/pkg/config/kube/gateway -run TestGolden -update

# Each fuzzer runs FUZZTIME: the parser and validators, the fast YAML
# subset decoder against the full YAML parser, ADS request
# handling (SotW and delta sequences over a real gRPC stream), the
# request codec that shares name lists, and every translator fed random
# valid configurations.
FUZZTIME ?= 30s
fuzz:
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
soak: $(KUBE_DEPS)
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" $(GO) test ./tests/soak -run TestSoakMixedChurn -count=1 -v -timeout 0 \
	  -args -soak.duration $(SOAKTIME) -soak.gateways 20 -soak.services 50 -soak.virtualservices 20 -soak.interval 250ms

docker:
	docker build -t wayfinder/pilot-discovery:dev .

clean:
	rm -rf $(BIN)

# The Kubernetes tests (tests/kube/...) run a real etcd and kube-apiserver on
# loopback. kube-deps installs etcd from Debian's etcd-server when it is
# missing and we are root (otherwise it says what to run, and the Kubernetes
# tests skip themselves), and builds kube-apiserver from source into
# $${XDG_CACHE_HOME:-~/.cache}/wayfinder once (about 6 minutes cold on an idle
# 2-core machine; instant afterwards).
kube-deps:
	@etcd=$$(tools/kube-apiserver/ensure-etcd.sh) && \
	  if [ -n "$$etcd" ]; then GO=$(GO) $(KUBE_APISERVER_ENSURE) >/dev/null; \
	  else echo "kube-deps: not building kube-apiserver until etcd is installed" >&2; fi

# Refresh manifests/crds from the istio.io/api version in go.mod: only the
# networking.istio.io kinds Wayfinder reads.
ISTIO_CRD_KINDS := gateways virtualservices destinationrules serviceentries

crds:
	@dir=$$($(GO) list -m -f '{{.Dir}}' istio.io/api) && ver=$$($(GO) list -m -f '{{.Version}}' istio.io/api) && \
	  manifests/refresh-crds.sh "$$dir/kubernetes/customresourcedefinitions.gen.yaml" "istio.io/api@$$ver" \
	    $(ISTIO_CRD_KINDS) > manifests/crds/istio-networking.yaml.tmp && \
	  mv manifests/crds/istio-networking.yaml.tmp manifests/crds/istio-networking.yaml
	@grep -c '^kind: CustomResourceDefinition' manifests/crds/istio-networking.yaml

# Refresh manifests/crds/gateway-api from the sigs.k8s.io/gateway-api version
# in go.mod: the module's standard-channel CRDs of the kinds Wayfinder reads,
# copied unchanged (each carries its bundle-version and channel annotations).
GATEWAY_API_CRD_KINDS := gatewayclasses gateways httproutes grpcroutes referencegrants tlsroutes tcproutes

gateway-api-crds:
	@dir=$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api) && \
	  for k in $(GATEWAY_API_CRD_KINDS); do \
	    cp "$$dir/config/crd/standard/gateway.networking.k8s.io_$$k.yaml" manifests/crds/gateway-api/ && \
	    chmod 644 manifests/crds/gateway-api/gateway.networking.k8s.io_$$k.yaml || exit 1; \
	  done
	@cat manifests/crds/gateway-api/*.yaml | grep -c '^kind: CustomResourceDefinition'

# The issue-6 benchmark matrix (services x gateways) against a fresh
# pilot-discovery and the floor server; results under bench-results/.
# e.g. make bench BENCH_FLAGS=--quick, or BENCH_FLAGS='--cases 1000x500 --delta'.
BENCH_OUT   ?= bench-results
BENCH_FLAGS ?=
.PHONY: bench
bench:
	$(GO) run ./tools/bench --out $(BENCH_OUT) $(BENCH_FLAGS)

# The Kubernetes-mode benchmark (issue 14): per case a real etcd and
# kube-apiserver on loopback (as the Kubernetes tests; see kube-deps), the
# workload written into it, pilot-discovery in Kubernetes mode and G
# simulated gateways; then endpoint churn at BENCH_KUBE_FLAGS' rates.
# Results in $(BENCH_OUT)/kube/kube-results.md. `make bench` runs it before
# the file-mode matrix; BENCH_KUBE= skips it. Shorter churn, e.g.:
# make bench-kube BENCH_KUBE_FLAGS='--kube-cases 1000x500 --churn-duration 60s'
BENCH_KUBE       ?= bench-kube
BENCH_KUBE_FLAGS ?=
.PHONY: bench-kube
bench: $(BENCH_KUBE)
bench-kube: $(KUBE_DEPS)
	KUBE_APISERVER="$${KUBE_APISERVER:-$$($(KUBE_APISERVER_ENSURE) --path)}" \
	  $(GO) run ./tools/bench --kube --out $(BENCH_OUT)/kube $(BENCH_KUBE_FLAGS)
