package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/randread"
)

// mixRates make a chunk of the test graphs (32 KiB) cost 32 µs to stream
// and a random read 12.5 µs: chunks with one or two targets' rows go to
// random reads, the others are streamed.
var mixRates = DiskRates{SeqBytesPerSec: 1e9, RandReadsPerSec: 8e4}

// skewedSeeds are m seeds drawn from the first fifth of the nodes and
// m/20 from the rest, sorted out by Open: dense chunks (streamed) and
// sparse ones (random-read) in the same layer.
func skewedSeeds(n uint32, m int, seed uint64) []uint32 {
	dense := randomSeeds(n/5, m, seed)
	sparse := randomSeeds(n-n/5, max(m/20, 1), seed+1)
	for _, v := range sparse {
		dense = append(dense, v+n/5)
	}
	return dense
}

// TestRandomReadsEqualStreaming is the per-chunk choice's contract: with
// RandomReads auto (rates that split layers between the stream and random
// reads) and always, the epoch equals pure streaming's (RandomReads off)
// and the pure random-read sampler's (randread), bit for bit — samples,
// edge ids, full layers' row offsets — over graphs with hubs and repeated
// neighbors, densities from one seed to every node, sampled and full
// layers mixed, with and without replacement and edge ids, 1 and 3
// devices, launches of a few targets; and auto really mixed the two.
func TestRandomReadsEqualStreaming(t *testing.T) {
	g := withHubs(repeatedCSR(12000, 8, 5), 400, 97)
	dir := writeMultigraph(t, g, 32<<10)
	n := g.NumNodes()
	rr, err := randread.Open(context.Background(), dir, randread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	mixed := false
	for _, devices := range []int{1, 3} {
		for _, edgeIDs := range []bool{false, true} {
			mk := func(mode RandomReads) *Sampler {
				return openSampler(t, dir, Options{Devices: devices, EdgeIDs: edgeIDs, MaxTargets: 7, RandomReads: mode, DiskRates: mixRates})
			}
			off, auto, always := mk(RandomOff), mk(RandomAuto), mk(RandomAlways)
			for trial, tc := range []struct {
				seeds   []uint32
				fanouts []int
				replace bool
			}{
				{[]uint32{17}, []int{5, 3}, false},
				{skewedSeeds(n, 200, 1), []int{4, 3}, false},
				{skewedSeeds(n, 300, 2), []int{6}, true},
				{skewedSeeds(n, 150, 3), []int{-1, 3}, false},
				{skewedSeeds(n, 150, 4), []int{3, -1}, true},
				{randomSeeds(n, 30, 5), []int{-1}, false},
				{randomSeeds(n, int(n), 6), []int{2}, false}, // every node
			} {
				key := epoch.Key{Seed: 11, Epoch: uint32(trial), Replace: tc.replace}
				name := fmt.Sprintf("devices %d edge ids %v trial %d fanouts %v", devices, edgeIDs, trial, tc.fanouts)
				want, err := off.SampleEpoch(context.Background(), tc.seeds, tc.fanouts, key)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range []*Sampler{auto, always} {
					got, st, err := s.SampleEpochStats(context.Background(), tc.seeds, tc.fanouts, key)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					requireEqualResults(t, got, want)
					if st.Random == nil || st.Random.Measured || st.Random.OffsetBytes == 0 && st.ChunksRandom() > 0 {
						t.Fatalf("%s: random stats %+v", name, st.Random)
					}
					for _, ls := range st.Layers {
						if s == always && (ls.ChunksRead != 0 || ls.ChunksRandom == 0 || ls.RandomTargets != ls.Targets) {
							t.Fatalf("%s: always streamed: %+v", name, ls)
						}
						if s == auto && ls.ChunksRead > 0 && ls.ChunksRandom > 0 {
							mixed = true
						}
						if ls.BytesRead < ls.RandomBytes || ls.RandomBlocks*randread.DefaultBlockSize != ls.RandomBytes {
							t.Fatalf("%s: bytes %+v", name, ls)
						}
					}
				}
				pure, _, err := rr.Sample(context.Background(), randread.Request{Seeds: tc.seeds, Fanouts: tc.fanouts, Key: key, EdgeIDs: edgeIDs})
				if err != nil {
					t.Fatal(err)
				}
				requireEqualResults(t, pure, want)
			}
		}
	}
	if !mixed {
		t.Fatal("auto never split a layer between streaming and random reads")
	}
}

// TestRandomReadsAcrossEpochs: the choice's state (offsets, rates, the
// per-target costs it observes) carries over epochs of one Sampler and
// the epochs still equal pure streaming's; a chunk in the chunk cache is
// streamed, never random-read, however few its targets.
func TestRandomReadsAcrossEpochs(t *testing.T) {
	g := randomCSR(8000, 6, 3)
	dir := writeGraph(t, g, 32<<10)
	off := openSampler(t, dir, Options{})
	auto := openSampler(t, dir, Options{RandomReads: RandomAuto, DiskRates: mixRates, ChunkCache: 1 << 30})
	// Epoch 0 streams every chunk into the cache (all nodes, dense).
	all := randomSeeds(g.NumNodes(), int(g.NumNodes()), 1)
	for e, seeds := range [][]uint32{all, {5}, {5, 3000, 7000}} {
		key := epoch.Key{Seed: 2, Epoch: uint32(e)}
		want, err := off.SampleEpoch(context.Background(), seeds, []int{4, 2}, key)
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := auto.SampleEpochStats(context.Background(), seeds, []int{4, 2}, key)
		if err != nil {
			t.Fatal(err)
		}
		requireEqualResults(t, got, want)
		if e > 0 && (st.ChunksRandom() != 0 || st.ChunksRead() != 0) {
			t.Fatalf("epoch %d: cached chunks not streamed from memory: %d random, %d read", e, st.ChunksRandom(), st.ChunksRead())
		}
	}
	// Once the cache is dropped, the same sparse epoch random-reads.
	auto.DropChunkCache()
	_, st, err := auto.SampleEpochStats(context.Background(), []uint32{5}, []int{4}, epoch.Key{Seed: 2, Epoch: 9})
	if err != nil {
		t.Fatal(err)
	}
	if st.ChunksRandom() != 1 || st.ChunksRead() != 0 || st.Layers[0].RandomReads == 0 {
		t.Fatalf("after DropChunkCache: %+v", st.Layers)
	}
}

// fakeRows are rows laid out back to back from a byte: row i of degree
// deg[i].
type fakeRows struct {
	deg map[uint32]int
	at  map[uint32]int64
}

func newFakeRows(first int64, nodes []uint32, deg []int) fakeRows {
	f := fakeRows{deg: map[uint32]int{}, at: map[uint32]int64{}}
	at := first
	for i, v := range nodes {
		f.deg[v], f.at[v] = deg[i], at
		at += 4 * int64(deg[i])
	}
	return f
}

func (f fakeRows) Row(_ int, v uint32) (int64, int) { return f.at[v], f.deg[v] }

// TestCostModelChoice: given the rates and a chunk's targets (their rows'
// places and degrees), the model's verdict: random reads or streaming
// where one estimate is below the other by more than tieBand, even (the
// chunk shared out between the halves) within it; a chunk in memory is
// always streamed.
func TestCostModelChoice(t *testing.T) {
	model := costModel{rates: DiskRates{SeqBytesPerSec: 1e9, RandReadsPerSec: 1e5}, blockSize: 4096, maxRun: 64 << 10}
	spread := func(n, d int) ([]uint32, []int) { // n rows of degree d, far apart
		nodes, deg := make([]uint32, n), make([]int, n)
		for i := range n {
			nodes[i], deg[i] = uint32(i), d
		}
		return nodes, deg
	}
	for _, tc := range []struct {
		name      string
		readBytes int64
		resident  bool
		n, d, k   int
		want      choice
	}{
		// 64 MiB chunk: 67 ms to stream; 10 µs a random read.
		{"one target of a big chunk", 64 << 20, false, 1, 50, 10, chooseRandomReads},
		{"the same chunk in memory", 64 << 20, true, 1, 50, 10, chooseStream},
		{"1000 targets (10 ms of reads)", 64 << 20, false, 1000, 2000, 10, chooseRandomReads},
		{"10000 scattered targets (100 ms)", 64 << 20, false, 10000, 2000, 10, chooseStream},
		{"a full layer over a hub (4 MB row, 64 runs)", 64 << 20, false, 1, 1 << 20, epoch.AllNeighbors, chooseRandomReads},
		{"a full layer over 200 hubs", 64 << 20, false, 200, 1 << 18, epoch.AllNeighbors, chooseStream},
		{"short rows of one block each: 3000 reads (42 ms)", 64 << 20, false, 3000, 4, 10, chooseRandomReads},
		{"short rows of one block each: 4500 reads (63 ms): even", 64 << 20, false, 4500, 4, 10, chooseEven},
		{"short rows of one block each: 7000 reads (98 ms)", 64 << 20, false, 7000, 4, 10, chooseStream},
		{"a small chunk (16 KiB: 16 µs) and 2 targets", 16 << 10, false, 2, 100, 10, chooseStream},
		{"a small chunk and 1 short row: even", 16 << 10, false, 1, 3, 10, chooseEven},
		{"a 32 KiB chunk and 1 short row", 32 << 10, false, 1, 3, 10, chooseRandomReads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, deg := spread(tc.n, tc.d)
			rows := newFakeRows(0, nodes, deg)
			if tc.d <= 100 {
				// Short rows 64 KiB apart: separate reads.
				for i, v := range nodes {
					rows.at[v] = int64(i) * 64 << 10
				}
			}
			f := chunkFacts{readBytes: tc.readBytes, resident: tc.resident, targets: tc.n}
			got := chooseStream
			if !f.resident {
				got, _, _ = judge(model, f, chunkJob{targets: nodes}, tc.k, false, 1, rows)
			}
			if got != tc.want {
				e := newRowEstimator(tc.k, false, 4096, 64<<10)
				for _, v := range nodes {
					e.add(rows.Row(0, v))
				}
				t.Fatalf("verdict %d, want %d (stream %.3g s, random %.3g s: %+v)", got, tc.want, model.streamCost(f), model.randomCost(e.est, tc.n), e.est)
			}
			if chooseRandom(model, f, chunkJob{targets: nodes}, tc.k, false, 1, rows) != (tc.want == chooseRandomReads && !tc.resident) && !tc.resident {
				t.Fatal("chooseRandom disagrees with judge")
			}
		})
	}
}

// TestAssignEven: chunks the model favours one way go that way; even
// ones are shared out so that the two halves' estimated times stay close.
func TestAssignEven(t *testing.T) {
	R, S, E := chooseRandomReads, chooseStream, chooseEven
	for _, tc := range []struct {
		name string
		vs   []verdict
		want []bool
	}{
		{"clear verdicts", []verdict{{R, 10, 1}, {S, 1, 10}, {R, 5, 2}}, []bool{true, false, true}},
		{"eight even chunks: half each", []verdict{{E, 10, 11}, {E, 10, 11}, {E, 10, 11}, {E, 10, 11}, {E, 10, 11}, {E, 10, 11}, {E, 10, 11}, {E, 10, 11}},
			[]bool{false, true, false, true, false, true, false, true}},
		{"even chunks after a heavy stream", []verdict{{S, 30, 100}, {E, 10, 11}, {E, 10, 11}, {E, 10, 11}}, []bool{false, true, true, true}}, // 30 against 33
		{"even chunks after a heavy random half", []verdict{{R, 100, 30}, {E, 10, 11}, {E, 10, 11}}, []bool{true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := assign(tc.vs); !slices.Equal(got, tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

// TestRowEstimatorExact: where every word of the rows is taken (full
// layers, and rows no longer than the fanout without replacement) add's
// estimate is the random-read sampler's own count of blocks and reads;
// addNode's (judge's) is, for every fanout, with and without
// replacement.
func TestRowEstimatorExact(t *testing.T) {
	g := withHubs(randomCSR(6000, 5, 8), 5000, 500)
	dir := writeGraph(t, g, 1<<20)
	for _, bs := range []int{512, 4096} {
		rr, err := randread.Open(context.Background(), dir, randread.Options{BlockSize: bs, MaxRun: 8 * bs})
		if err != nil {
			t.Fatal(err)
		}
		defer rr.Close()
		m := rr.Manifest()
		ix, err := chunkfmt.LoadIndex(dir, m)
		if err != nil {
			t.Fatal(err)
		}
		for trial, seeds := range [][]uint32{{1}, randomSeeds(6000, 40, 2), randomSeeds(6000, 3000, 3)} {
			frontier := sortedUnique(seeds)
			for _, k := range []int{epoch.AllNeighbors, 64} {
				e := newRowEstimator(k, false, int64(bs), int64(8*bs))
				for _, v := range frontier {
					if k > 0 {
						_, d := rr.Row(ix.ChunkOf(v), v)
						if d > k {
							continue
						}
					}
					e.add(rr.Row(ix.ChunkOf(v), v))
				}
				var nodes []uint32
				for _, v := range frontier {
					if _, d := rr.Row(ix.ChunkOf(v), v); k < 0 || d <= k {
						nodes = append(nodes, v)
					}
				}
				_, st, err := rr.Sample(context.Background(), randread.Request{Seeds: nodes, Fanouts: []int{k}, Key: epoch.Key{Seed: 1}})
				if err != nil {
					t.Fatal(err)
				}
				ls := st.Layers[0]
				if e.est.blocks != ls.Blocks || e.est.reads != ls.Reads {
					t.Fatalf("block %d trial %d fanout %d: estimate %+v, read %d blocks in %d reads", bs, trial, k, e.est, ls.Blocks, ls.Reads)
				}
			}
			// addNode, which draws the positions as the layer does, is
			// exact for every row, sampled ones included.
			for _, k := range []int{epoch.AllNeighbors, 3, 10, 64} {
				for _, replace := range []bool{false, true} {
					key := epoch.Key{Seed: 7, Replace: replace}
					e := newRowEstimator(k, replace, int64(bs), int64(8*bs))
					for _, v := range frontier {
						at, d := rr.Row(ix.ChunkOf(v), v)
						e.addNode(at, d, v, key.Layer(0))
					}
					_, st, err := rr.Sample(context.Background(), randread.Request{Seeds: frontier, Fanouts: []int{k}, Key: key})
					if err != nil {
						t.Fatal(err)
					}
					if ls := st.Layers[0]; e.est.blocks != ls.Blocks || e.est.reads != ls.Reads {
						t.Fatalf("addNode: block %d trial %d fanout %d replace %v: estimate %+v, read %d blocks in %d reads", bs, trial, k, replace, e.est, ls.Blocks, ls.Reads)
					}
				}
			}
		}
	}
}

// TestRandomReadsCorrupt: a neighbor word that is not a node, read by
// random reads, fails the epoch with an error naming the chunk, the
// node and the word (a *chunkfmt.DefectError), as randread's does.
func TestRandomReadsCorrupt(t *testing.T) {
	g := randomCSR(3000, 6, 4)
	dir := writeGraph(t, g, 16<<10)
	rr, err := randread.Open(context.Background(), dir, randread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := rr.Manifest()
	ix, _ := chunkfmt.LoadIndex(dir, m)
	const victim = 1777
	c := ix.ChunkOf(victim)
	at, d := rr.Row(c, victim)
	rr.Close()
	if d == 0 {
		t.Fatal("victim has no neighbors")
	}
	path := filepath.Join(dir, chunkfmt.ChunksFile)
	for i := range d {
		writeWordAt(t, path, at+4*int64(i), 0xfffffff0)
	}
	s := openSampler(t, dir, Options{RandomReads: RandomAlways})
	_, err = s.SampleEpoch(context.Background(), []uint32{victim}, []int{3}, epoch.Key{})
	var de *chunkfmt.DefectError
	if !errors.As(err, &de) || de.Chunk != c || de.Node != victim || !strings.Contains(err.Error(), "random reads") || !strings.Contains(err.Error(), "is not a node") {
		t.Fatalf("err %v, want a defect of chunk %d node %d", err, c, victim)
	}
	// A full layer too.
	_, err = s.SampleEpoch(context.Background(), []uint32{victim}, []int{-1}, epoch.Key{})
	if !errors.As(err, &de) || de.Node != victim {
		t.Fatalf("full layer: err %v", err)
	}
}

// TestRandomReadsOptions: the modes parse; always is refused where random
// reads cannot go (VerifyReads), auto is off there with a note; auto
// without rates on a small graph (whose reads cost less than the probe)
// decides on the prior rates and does not measure the disk.
func TestRandomReadsOptions(t *testing.T) {
	for _, s := range []string{"off", "auto", "always"} {
		m, err := ParseRandomReads(s)
		if err != nil || m.String() != s {
			t.Fatalf("%q: %v %v", s, m, err)
		}
	}
	if _, err := ParseRandomReads("sometimes"); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	g := randomCSR(500, 4, 1)
	dir := writeGraph(t, g, 8<<10)
	if _, err := Open(dir, Options{RandomReads: RandomAlways, VerifyReads: true}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("always with VerifyReads: %v", err)
	}
	s := openSampler(t, dir, Options{RandomReads: RandomAuto, VerifyReads: true})
	_, st, err := s.SampleEpochStats(context.Background(), []uint32{3}, []int{2}, epoch.Key{})
	if err != nil || st.Random != nil || !strings.Contains(strings.Join(st.Notes, ";"), "random reads off") {
		t.Fatalf("auto with VerifyReads: %v, %+v", err, st)
	}
	s = openSampler(t, dir, Options{RandomReads: RandomAuto})
	_, st, err = s.SampleEpochStats(context.Background(), []uint32{499}, []int{2}, epoch.Key{})
	if err != nil || st.Random == nil || st.Random.Measured || st.Random.Rates != PriorDiskRates || st.Random.Disabled != "" {
		t.Fatalf("auto on a small graph: %v, %+v", err, st.Random)
	}
	if !strings.Contains(st.String(), "random reads auto") {
		t.Fatal(st.String())
	}
}

// TestProbeRates: the disk probe measures positive rates on a real file.
func TestProbeRates(t *testing.T) {
	g := randomCSR(20000, 8, 1)
	s := openSampler(t, writeGraph(t, g, 64<<10), Options{})
	r, err := s.probeRates(context.Background())
	if err != nil || r.SeqBytesPerSec <= 0 || r.RandReadsPerSec <= 0 {
		t.Fatalf("%+v %v", r, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.probeRates(ctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
