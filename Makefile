# streamsampler — build, test, benchmark and demo targets.
#
# `make demo` is the main job on bundled real data; `make test` is what CI
# runs (.ci/run calls it after installing the system packages it needs).

GO        ?= go
BIN       ?= bin
DEMO_DIR  ?= $(CURDIR)/out/demo
PYTHON    ?= /usr/bin/python3
GOFLAGS_RACE ?= -race

.PHONY: all build test test-go test-xrt test-python vet bench demo hls-csim clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

vet:
	$(GO) vet ./...

test: vet test-go

test-go:
	$(GO) test $(GOFLAGS_RACE) -timeout 30m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./rng/

demo: build
	rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	@echo "demo: not yet wired"

clean:
	rm -rf $(BIN) out
