# Wayfinder. `make run` serves the bundled samples; `make test` runs every test.
GO        ?= go
BIN       := bin
CONFIG_DIR ?= manifests/samples
TEST_FLAGS ?= -count=1
# Tests run with the race detector unless RACE= is given.
RACE      ?= -race

.PHONY: all build run test test-short vet fmt golden fuzz docker clean

all: build

build:
	$(GO) build -o $(BIN)/pilot-discovery ./pilot/cmd/pilot-discovery

run: build
	$(BIN)/pilot-discovery discovery --config-dir $(CONFIG_DIR) --grpc-addr 127.0.0.1:15010 --http-addr 127.0.0.1:15014

test: vet
	$(GO) test $(RACE) $(TEST_FLAGS) ./...

test-short:
	$(GO) test -short $(TEST_FLAGS) ./...

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Regenerate the translation golden files after an intended output change.
golden:
	$(GO) test ./pilot/pkg/networking/core -run TestGolden -update

fuzz:
	$(GO) test ./pkg/config/manifest -run '^$$' -fuzz FuzzParseValidate -fuzztime 60s

docker:
	docker build -t wayfinder/pilot-discovery:dev .

clean:
	rm -rf $(BIN)
