# streamsampler — build, test, benchmark and demo targets.
#
# `make demo` is the main job on bundled real data; `make test` is what CI
# runs (.ci/run calls it after installing the system packages it needs).

GO           ?= go
BIN          ?= bin
DEMO_DIR     ?= $(CURDIR)/out/demo
PYTHON       ?= /usr/bin/python3
GOFLAGS_RACE ?= -race
STATICCHECK  ?= $(shell command -v staticcheck 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/staticcheck)

.PHONY: all deps build test vet lint test-go test-xrt hls-csim gpu test-gpu bench demo clean

all: build

# System packages and tools the tests need (apt as root; skips what is there).
deps:
	scripts/deps.sh

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# vet covers every build-tag variant of the xrt binding: the real XRT
# driver, the noop driver and the cgo-free build.
vet:
	$(GO) vet ./...
	$(GO) vet -tags xrt ./xrt/...
	$(GO) vet -tags xrt,xrt_noop ./xrt/...
	CGO_ENABLED=0 $(GO) vet ./xrt/... ./hls/...

lint: vet
	@test -x "$(STATICCHECK)" || { echo "staticcheck not found: go install honnef.co/go/tools/cmd/staticcheck@v0.8.2"; exit 1; }
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags xrt ./xrt/...

test: deps
	$(MAKE) lint test-go test-xrt hls-csim

test-go:
	$(GO) test $(GOFLAGS_RACE) -timeout 40m ./...

test-xrt:
	$(GO) test $(GOFLAGS_RACE) -tags xrt ./xrt/...
	$(GO) test $(GOFLAGS_RACE) -tags xrt,xrt_noop ./xrt/...
	CGO_ENABLED=0 $(GO) test ./xrt/... ./hls/...

hls-csim:
	$(MAKE) -C hls csim

# The CUDA backend: needs nvcc and a GPU (see docs/GPU.md); not part of `test`.
gpu:
	$(MAKE) -C gpu install BIN=$(abspath $(BIN))

test-gpu:
	$(MAKE) -C gpu test

bench:
	$(GO) test -run '^$$' -bench . -count 5 ./rng/ ./chunkfmt/ ./hls/ ./xrt/ ./epoch/

demo: build
	rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	@echo "demo: not yet wired"

clean:
	rm -rf $(BIN) out hls/build
