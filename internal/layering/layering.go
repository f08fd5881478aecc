// Package layering states docs/DESIGN.md §6's dependency direction as
// data, and checks an import graph against it: each of the module's
// packages may import only the packages its rule names (the module's
// internal/... leaves are open to all). Its test runs `go list -deps`
// over the module, so that an import against the design fails `go test`,
// and a new package fails until it is given a place here and in DESIGN.
package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path the rules' package names are relative to.
const Module = "github.com/streamsampler/streamsampler"

// Any allows every package of the module (the commands and benchmarks).
const Any = "*"

// Rules maps each package (relative to Module) to the packages it may
// import. internal/... packages may import each other and be imported by
// anyone; Rules still names each, so that a new one is a decision.
var Rules = map[string][]string{
	// Leaves: the contracts everything else is written against.
	"rng":      {},
	"featplan": {},
	"chunkfmt": {},
	// The graph's files and what builds them.
	"featstore": {"chunkfmt"},
	"heterofmt": {"chunkfmt", "featstore"},
	"ingest":    {"rng", "chunkfmt", "featstore", "heterofmt"},
	// The sampling devices.
	"hls":             {"rng", "chunkfmt"},
	"xrt/xclbin":      {},
	"xrt":             {"hls", "xrt/xclbin"},
	"epoch":           {"rng"},
	"epoch/epochtest": {"rng", "epoch"},
	"walk":            {"rng", "chunkfmt"},
	"host":            {"rng", "chunkfmt", "hls", "xrt", "epoch", "walk", "randread"},
	"gpu":             {"rng", "chunkfmt", "epoch", "walk"},
	// The random-read sampler: any seeds, no epoch, only the blocks that
	// hold the chosen neighbors read.
	"randread": {"rng", "chunkfmt", "hls", "xrt", "xrt/xclbin", "epoch"},
	// Heterogeneous epochs: each relation's layers through a host.Sampler.
	// What a heterogeneous epoch is (schema, Result, minibatch assembly),
	// apart from its samplers, as epoch is for homogeneous ones.
	"heteroepoch":  {"chunkfmt", "epoch"},
	"heterosample": {"rng", "chunkfmt", "heterofmt", "hls", "epoch", "heteroepoch", "host"},
	// Link prediction's training edges: their stored edge ids, by one
	// pass over the chunks.
	"edgeids": {"chunkfmt", "epoch"},
	// Persistence and scheduling above the samplers' results.
	"epochdir": {"chunkfmt", "epoch"},
	"statedir": {"chunkfmt", "epoch", "epochdir"},
	"pipeline": {"epoch", "epochdir", "statedir", "featplan"},
	"featrows": {"featstore", "featplan"},
	// Layer-wise inference: the full scan of the chunks, and its passes
	// with their rows.
	"fullscan":  {"chunkfmt"},
	"layerwise": {"chunkfmt", "fullscan", "featstore", "featplan"},
	// An epoch's delivery figures and their rendering (run's and serve's).
	"epochstats": {"featplan"},
	// One minibatch's output formats, its feature rows read directly.
	"batchfmt": {"chunkfmt", "epoch", "featstore", "featplan", "featrows"},
	// A training run without a trainer: the pipeline over a sampler, with
	// its state directory and its feature rows.
	"runloop": {"epoch", "statedir", "pipeline", "featstore", "featplan", "featrows", "epochstats", "host"},
	// The server takes its samplers and walkers as interfaces: not host,
	// not gpu, not heterosample (its heterogeneous epochs' types are
	// heteroepoch's).
	"serve": {"chunkfmt", "epoch", "pipeline", "featstore", "featplan", "featrows", "epochstats", "walk", "fullscan", "layerwise", "heterofmt", "heteroepoch"},
	// Harnesses and programs.
	"internal/hostbench":      {"chunkfmt", "epoch", "hls", "host", "pipeline"},
	"cmd/chunkify":            {Any},
	"cmd/streamsampler":       {Any},
	"bench/serve_bench":       {Any},
	"bench/lwinfer":           {Any},
	"bench/randread":          {Any},
	"bench/crossover":         {Any},
	"bench/link":              {Any},
	"internal/aio":            {},
	"internal/atomicfile":     {},
	"internal/chisq":          {},
	"internal/crc32c":         {},
	"internal/failpoint":      {},
	"internal/hostorder":      {},
	"internal/hugepages":      {},
	"internal/npy":            {},
	"internal/progress":       {},
	"internal/radix":          {},
	"internal/usage":          {},
	"internal/layering":       {},
	"internal/memavail":       {},
	"internal/procio":         {},
	"featstore/featstoretest": {"featstore"},
	"ingest/ingesttest":       {"ingest"},
	"internal/testgraph":      {},
}

// Check returns one line for each import of graph (package → the packages
// it imports, both relative to Module; packages outside the module
// already left out) that Rules do not allow, and for each package Rules
// do not know. Nil means the graph follows the design.
func Check(graph map[string][]string) []string {
	var bad []string
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		allowed, ok := Rules[p]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: a package without a rule: give it its place in internal/layering.Rules and docs/DESIGN.md §6", p))
			continue
		}
		if slices.Contains(allowed, Any) {
			continue
		}
		for _, q := range graph[p] {
			if strings.HasPrefix(q, "internal/") && q != "internal/hostbench" || slices.Contains(allowed, q) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s imports %s: against docs/DESIGN.md §6 (it may import %s)", p, q, strings.Join(allowed, ", ")))
		}
	}
	return bad
}
