// Command link measures a link-prediction epoch (issue 26, item 6) on a
// graph directory: a fraction of the stored edges as training edges
// (--frac, chosen by a seeded hash of the edge id), minibatches of
// --batch-size edges with binary negatives (--amount per positive), the
// epoch sampled by the emulated SmartSSD and every minibatch assembled
// (--workers goroutines, in order, as run and serve do); then, in the
// same run, the node-classification epoch whose training nodes are the
// link epoch's distinct seed nodes (its frontier_0), same fanouts, batch
// size and workers. It prints both epochs' wall (sampling included),
// their assembled edges per second, and link/node against --max-ratio
// (the 1.3) as PASS or FAIL, with the cost per assembled seed
// beside it (a link minibatch of B edges has up to 4B seeds with 1:1
// negatives, a node minibatch B); --json writes the figures. With --runs
// the two epochs alternate (link, node, link, node, …: the chunk cache
// warm for both after the first) and the medians are reported.
//
//	go run ./bench/link --graph /tmp/i24/g22
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/edgeids"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/pipeline"
	"github.com/streamsampler/streamsampler/rng"
)

// epochFigures are one epoch's measurements.
type epochFigures struct {
	Minibatches int     `json:"minibatches"`
	Seeds       int64   `json:"seeds"` // over the minibatches (a node in two counts twice)
	Distinct    int     `json:"distinct_seeds"`
	Edges       int64   `json:"edges"`
	WallS       float64 `json:"wall_s"`     // sampling and assembling every minibatch
	SampleS     float64 `json:"sample_s"`   // preparing the epoch (sampling, negatives, shards)
	AssembleS   float64 `json:"assemble_s"` // wall - sample_s
	EdgesPerS   float64 `json:"edges_per_s"`
}

type report struct {
	Graph      string       `json:"graph"`
	NumNodes   uint32       `json:"num_nodes"`
	NumEdges   uint64       `json:"num_edges"`
	TrainEdges int          `json:"train_edges"`
	ResolveS   float64      `json:"resolve_s"` // edge ids → pairs, one pass over the chunks
	BatchSize  int          `json:"batch_size"`
	Fanouts    []int        `json:"fanouts"`
	Amount     float64      `json:"amount"`
	Semantics  string       `json:"semantics"`
	Workers    int          `json:"workers"`
	Devices    int          `json:"devices"`
	Runs       int          `json:"runs"`
	Link       epochFigures `json:"link"` // the run of median wall
	Node       epochFigures `json:"node"`
	LinkWalls  []float64    `json:"link_walls_s"`
	NodeWalls  []float64    `json:"node_walls_s"`
	// Matched is the node epoch over the same distinct seed nodes in
	// minibatches of the link minibatches' mean seed count (MatchedBatch):
	// per minibatch, the same assembly work as a link minibatch's.
	Matched      epochFigures `json:"node_matched"`
	MatchedBatch int          `json:"node_matched_batch_size"`
	MatchedWalls []float64    `json:"node_matched_walls_s"`
	// PerBatchRatio is (link wall / link minibatches) / (matched node
	// wall / its minibatches).
	PerBatchRatio float64  `json:"per_minibatch_ratio"`
	Ratio         float64  `json:"link_over_node"` // median walls
	PerSeedRatio  float64  `json:"per_seed_ratio"` // (link wall / link seeds) / (node wall / node seeds)
	MaxRatio      float64  `json:"max_ratio"`
	Pass          bool     `json:"pass"`
	GOMAXPROCS    int      `json:"gomaxprocs"`
	StartedAtUTC  string   `json:"started_at_utc"`
	CommandLine   []string `json:"command_line"`
}

func main() {
	graph := flag.String("graph", "", "graph directory")
	frac := flag.Float64("frac", 0.1, "fraction of the stored edges taken as training edges")
	batch := flag.Int("batch-size", 1024, "edges per link minibatch, nodes per node minibatch")
	fanouts := flag.String("fanouts", "15,10,5", "fanouts, hop 1 first")
	amount := flag.Float64("amount", 1, "binary negatives per positive")
	seed := flag.Uint64("seed", 1, "seed (training edges, negatives, samples)")
	sem := flag.String("semantics", "dgl", "dgl or pyg")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "assembling goroutines")
	devices := flag.Int("devices", 1, "emulated devices")
	maxRatio := flag.Float64("max-ratio", 1.3, "the target: link epoch ≤ this × the node epoch")
	jsonOut := flag.String("json", "", "write the figures here")
	runs := flag.Int("runs", 3, "alternating runs of each epoch; medians reported")
	flag.Parse()
	if err := run(*graph, *frac, *batch, *fanouts, *amount, *seed, *sem, *workers, *devices, *runs, *maxRatio, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "link:", err)
		os.Exit(1)
	}
}

func run(dir string, frac float64, batch int, fanoutList string, amount float64, seed uint64, semName string, workers, devices, runs int, maxRatio float64, jsonOut string) error {
	if dir == "" || !(frac > 0 && frac <= 1) || batch < 1 || runs < 1 {
		return fmt.Errorf("want --graph, --frac in (0, 1], --batch-size >= 1 and --runs >= 1")
	}
	var fo []int
	for _, f := range strings.Split(fanoutList, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("--fanouts %q: %w", fanoutList, err)
		}
		fo = append(fo, k)
	}
	sem, err := epoch.ParseSemantics(semName)
	if err != nil {
		return err
	}
	ctx := context.Background()
	rep := &report{Graph: dir, BatchSize: batch, Fanouts: fo, Amount: amount, Semantics: semName, Workers: workers, Devices: devices,
		Runs: runs, MaxRatio: maxRatio, GOMAXPROCS: runtime.GOMAXPROCS(0), StartedAtUTC: time.Now().UTC().Format(time.RFC3339), CommandLine: os.Args}

	// The training edges: each stored edge with probability frac, by a
	// seeded hash of its id, and their pairs by one pass over the chunks.
	g, err := chunkfmt.Open(dir)
	if err != nil {
		return err
	}
	m := g.Manifest
	rep.NumNodes, rep.NumEdges = m.NumNodes, m.NumEdges
	thr := uint64(frac * (1 << 63) * 2)
	if frac == 1 {
		thr = ^uint64(0)
	}
	var eids []int64
	for e := uint64(0); e < m.NumEdges; e++ {
		if rng.Mix64(seed^0x11AC_0000_0000_0000^e) <= thr {
			eids = append(eids, int64(e))
		}
	}
	t0 := time.Now()
	src, dst, _, err := edgeids.Pairs(ctx, g, eids)
	g.Close()
	if err != nil {
		return err
	}
	rep.ResolveS = time.Since(t0).Seconds()
	rep.TrainEdges = len(eids)
	link := &epoch.Link{Edges: &epoch.EdgeSet{Src: src, Dst: dst, EIDs: eids}, Neg: epoch.NegBinary, Amount: amount, NumNodes: m.NumNodes}

	be, err := host.Open(dir, host.Options{Devices: devices, ChunkCache: host.AutoChunkCache(m, memavail.Available())})
	if err != nil {
		return err
	}
	defer be.Close()
	base := pipeline.Config{Sampling: epoch.Sampling{Fanouts: fo, Seed: seed}, BatchSize: batch, Semantics: sem, Epochs: 1}

	linkCfg := base
	linkCfg.Link = link
	_, seeds := linkCfg.LinkMinibatches(0)
	nodeCfg := base
	nodeCfg.Train = seeds
	// The node epoch whose minibatches are as large as the link ones (in
	// seeds): a link epoch assembles each distinct node in about as many
	// minibatches as it has training edges and negatives, which no node
	// epoch over those nodes can (each node is a seed once).
	lbs, _ := linkCfg.LinkMinibatches(0)
	var linkSeeds int
	for _, lb := range lbs {
		linkSeeds += len(lb.Seeds)
	}
	matchedCfg := nodeCfg
	matchedCfg.BatchSize = max(1, (linkSeeds+len(lbs)/2)/max(1, len(lbs)))
	rep.MatchedBatch = matchedCfg.BatchSize
	var links, nodes, matched []epochFigures
	for r := range runs {
		f, err := measure(ctx, linkCfg, be, workers)
		if err != nil {
			return fmt.Errorf("link epoch, run %d: %w", r+1, err)
		}
		f.Distinct = len(seeds)
		links = append(links, f)
		rep.LinkWalls = append(rep.LinkWalls, f.WallS)
		if f, err = measure(ctx, nodeCfg, be, workers); err != nil {
			return fmt.Errorf("node epoch, run %d: %w", r+1, err)
		}
		f.Distinct = len(seeds)
		nodes = append(nodes, f)
		rep.NodeWalls = append(rep.NodeWalls, f.WallS)
		if f, err = measure(ctx, matchedCfg, be, workers); err != nil {
			return fmt.Errorf("node epoch of matched minibatches, run %d: %w", r+1, err)
		}
		f.Distinct = len(seeds)
		matched = append(matched, f)
		rep.MatchedWalls = append(rep.MatchedWalls, f.WallS)
	}
	rep.Link, rep.Node, rep.Matched = median(links), median(nodes), median(matched)
	rep.PerBatchRatio = (rep.Link.WallS / float64(rep.Link.Minibatches)) / (rep.Matched.WallS / float64(rep.Matched.Minibatches))
	rep.Ratio = rep.Link.WallS / rep.Node.WallS
	rep.PerSeedRatio = (rep.Link.WallS / float64(rep.Link.Seeds)) / (rep.Node.WallS / float64(rep.Node.Seeds))
	rep.Pass = rep.Ratio <= maxRatio

	fmt.Printf("graph %s: %d nodes, %d edges; %d training edges (%.0f%%; pairs from edge ids in %.2f s)\n",
		dir, rep.NumNodes, rep.NumEdges, rep.TrainEdges, 100*frac, rep.ResolveS)
	fmt.Printf("fanouts %v, batch %d, binary negatives %g:1, %s semantics, %d workers, %d device(s), GOMAXPROCS %d\n",
		fo, batch, amount, semName, workers, devices, rep.GOMAXPROCS)
	for _, e := range []struct {
		name string
		f    epochFigures
	}{{"link", rep.Link}, {"node", rep.Node}, {fmt.Sprintf("node (batch %d)", rep.MatchedBatch), rep.Matched}} {
		fmt.Printf("%s epoch: %d minibatches, %d seeds (%d distinct), %d edges; wall %.2f s (sampling %.2f s, assembly %.2f s); %.3g assembled edges/s\n",
			e.name, e.f.Minibatches, e.f.Seeds, e.f.Distinct, e.f.Edges, e.f.WallS, e.f.SampleS, e.f.AssembleS, e.f.EdgesPerS)
	}
	verdict := "FAIL"
	if rep.Pass {
		verdict = "PASS"
	}
	fmt.Printf("walls over %d alternating runs: link %v s, node %v s (medians above)\n", runs, rep.LinkWalls, rep.NodeWalls)
	fmt.Printf("per assembled seed: link %.3g µs, node %.3g µs (%.2f×)\n",
		1e6*rep.Link.WallS/float64(rep.Link.Seeds), 1e6*rep.Node.WallS/float64(rep.Node.Seeds), rep.PerSeedRatio)
	fmt.Printf("per minibatch against node minibatches of %d seeds: link %.3g ms, node %.3g ms (%.2f×)\n", rep.MatchedBatch,
		1e3*rep.Link.WallS/float64(rep.Link.Minibatches), 1e3*rep.Matched.WallS/float64(rep.Matched.Minibatches), rep.PerBatchRatio)
	fmt.Printf("link/node %.2f× (target ≤ %.2g×): %s\n", rep.Ratio, maxRatio, verdict)
	if jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// measure runs one epoch of cfg through the pipeline: sampled, then every
// minibatch assembled by workers goroutines and handed out in order.
func measure(ctx context.Context, cfg pipeline.Config, be host.Backend, workers int) (epochFigures, error) {
	var f epochFigures
	t0 := time.Now()
	p, err := pipeline.NewPipeline(cfg, be.SampleEpoch, nil)
	if err != nil {
		return f, err
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		return f, err
	}
	f.SampleS = time.Since(t0).Seconds()
	err = p.RunOrdered(ctx, workers, func(b *pipeline.Minibatch) error {
		f.Minibatches++
		f.Seeds += int64(len(b.Blocks.Seeds))
		f.Edges += int64(b.Blocks.NumEdges())
		return nil
	})
	if err != nil {
		return f, err
	}
	f.WallS = time.Since(t0).Seconds()
	f.AssembleS = f.WallS - f.SampleS
	f.EdgesPerS = float64(f.Edges) / f.AssembleS
	return f, nil
}

// median returns the figures of the run of median wall (the lower middle
// of an even count).
func median(fs []epochFigures) epochFigures {
	s := slices.Clone(fs)
	slices.SortFunc(s, func(a, b epochFigures) int { return cmp.Compare(a.WallS, b.WallS) })
	return s[(len(s)-1)/2]
}
