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

.PHONY: all deps build test vet lint test-go test-xrt test-python typecheck-python hls-csim gpu test-gpu bench bench-chunkify bench-streamsampler bench-scale bench-features bench-serve bench-train demo demo-hetero clean

all: build

# System packages and tools the tests need (apt as root; skips what is there).
deps:
	scripts/deps.sh

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# vet covers every build-tag variant of the xrt binding: the real XRT
# driver, the noop driver and the cgo-free build; and a platform other
# than Linux (macOS: the _other.go files, which nothing else compiles).
vet:
	$(GO) vet ./...
	$(GO) vet -tags xrt ./xrt/...
	$(GO) vet -tags xrt,xrt_noop ./xrt/...
	CGO_ENABLED=0 $(GO) vet ./xrt/... ./hls/...
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet ./...

lint: vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  test -z "$$unformatted" || { echo "gofmt would change: $$unformatted"; exit 1; }
	@test -x "$(STATICCHECK)" || { echo "staticcheck not found: go install honnef.co/go/tools/cmd/staticcheck@v0.8.2"; exit 1; }
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags xrt ./xrt/...

test: deps
	$(MAKE) lint test-go test-xrt hls-csim test-python

# go test's usual output (package lines, failures), then every skipped test
# with its reason (scripts/gotest-skips.py reads go test -json), so that a
# run without ../shared says what it did not test. Fails if go test does.
test-go:
	bash -o pipefail -c '$(GO) test $(GOFLAGS_RACE) -timeout 40m -json ./... | $(PYTHON) scripts/gotest-skips.py'

test-xrt:
	$(GO) test $(GOFLAGS_RACE) -tags xrt ./xrt/...
	$(GO) test $(GOFLAGS_RACE) -tags xrt,xrt_noop ./xrt/...
	CGO_ENABLED=0 $(GO) test ./xrt/... ./hls/...

# The Python client: the type check, then unittest (no pytest needed),
# numpy from Debian's /usr/bin/python3; the live tests build the Go
# binaries themselves, and test_install pip-installs the package (which
# builds the binaries into it) into a temporary venv (offline;
# python3-venv and python3-wheel from `make deps`) to run the README's
# example from outside the checkout.
test-python: typecheck-python
	PYTHONPATH=python $(PYTHON) -m unittest discover -v -s python/tests -t python

# mypy (Debian's python3-mypy, from `make deps`) over the package and its
# setup.py, configured in python/pyproject.toml; zero errors or it fails.
typecheck-python:
	cd python && $(PYTHON) -m mypy

hls-csim:
	$(MAKE) -C hls csim

# The CUDA backend: needs nvcc and a GPU (see docs/GPU.md); not part of `test`.
gpu:
	$(MAKE) -C gpu install BIN=$(abspath $(BIN))

# On the GPU machine: the C++ engine tests, then the Go test binary built
# here (`go test -c -o bin/gpu.test ./gpu/`) when it is present.
test-gpu:
	$(MAKE) -C gpu test test-go GPU_GO_TEST=$(abspath $(BIN)/gpu.test)

# Micro-benchmarks beside the code (ratios against same-run floors).
bench:
	$(GO) test -run '^$$' -bench . -count 5 ./rng/ ./hls/ ./xrt/ ./epoch/ ./serve/
	$(GO) test -run '^$$' -bench . -benchtime 5x -count 3 ./chunkfmt/
	$(GO) test -run '^$$' -bench . -benchtime 3x ./host/

# End-to-end benchmarks on generated R-MAT graphs (minutes; see docs/PERFORMANCE.md).
bench-chunkify: build
	bench/chunkify.sh

bench-streamsampler: build
	bench/streamsampler.sh

# Issue 11's scale benchmark: R-MAT scales 20-26 (hours, ≈ 30 GB of disk under
# BENCH_DIR, default /tmp/ss-scale); SCALES="20 22" for a quick look,
# SCALE_ARGS=--papers100m to add scale 27 (≈ 40 GB). See bench/scale.sh.
bench-scale:
	bench/scale.sh $(SCALE_ARGS)

# Issue 12's feature benchmark: scale 22 with 2 GiB of features, one epoch to
# a Python consumer inside a 1 GiB memory cgroup, against numpy.memmap and the
# I/O floor. See bench/features.sh.
bench-features:
	bench/features.sh

# Issue 23's yardstick, on the GPU machine (torch, torch_geometric): a PyG
# GraphSAGE loop with our loader against a plain-torch one; see
# bench/train_e2e.py (and torchrun for 2 GPUs).
bench-train: build
	$(PYTHON) bench/train_e2e.py --binary $(BIN)/streamsampler --chunkify $(BIN)/chunkify --work $(CURDIR)/out/e2e

bench-serve:
	$(GO) run ./bench/serve_bench --scale 21 --edge-factor 30 --reps 9 --batches 16

# The main job on bundled real data (SNAP email-Eu-core): chunkify it into
# 16 KiB chunks, describe and verify the graph directory, run two epochs on
# two emulated SmartSSDs with the second prepared in the background, then
# the CLI's state-directory round trip and one minibatch's block sizes.
demo: build
	rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	$(BIN)/chunkify build testdata/email-Eu-core.txt.gz -o $(DEMO_DIR)/email --chunk-size 16KiB
	$(BIN)/chunkify info $(DEMO_DIR)/email
	$(BIN)/chunkify verify $(DEMO_DIR)/email
	seq 0 2 1004 > $(DEMO_DIR)/train.txt
	$(BIN)/streamsampler run --graph $(DEMO_DIR)/email --train $(DEMO_DIR)/train.txt --fanouts 15,10,5 --batch-size 64 --epochs 2 --devices 2
	$(BIN)/streamsampler prepare --state $(DEMO_DIR)/state --graph $(DEMO_DIR)/email --train $(DEMO_DIR)/train.txt --fanouts 15,10,5 --seed 1
	$(BIN)/streamsampler prepare --state $(DEMO_DIR)/state
	$(BIN)/streamsampler advance --state $(DEMO_DIR)/state
	$(BIN)/streamsampler sample --state $(DEMO_DIR)/state --seeds 0,2,4 --format summary
	$(BIN)/streamsampler info --state $(DEMO_DIR)/state
	$(BIN)/streamsampler walk --graph $(DEMO_DIR)/email --all --walks-per-node 2 --length 20 --mode node2vec --p 0.5 --q 2 --devices 2 -o $(DEMO_DIR)/walks.npy

# Heterogeneous graphs (issue 27): build from typed edge lists, serve,
# iterate HeteroData minibatches (raw HeteroBatches without torch_geometric).
demo-hetero: build
	PYTHONPATH=python STREAMSAMPLER_BIN=$(abspath $(BIN))/streamsampler $(PYTHON) python/examples/hetero_quickstart.py --chunkify $(abspath $(BIN))/chunkify --out $(DEMO_DIR)/hetero-mini

clean:
	rm -rf $(BIN) out hls/build
