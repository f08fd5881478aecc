package randread_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/testgraph"
	"github.com/streamsampler/streamsampler/randread"
)

// writeGraph packs g into a graph directory with the given chunk size
// (dedup off: repeated neighbors are kept where g has them).
func writeGraph(t testing.TB, g *host.CSR, chunkSize int64, dedup bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "graph")
	w, err := chunkfmt.NewWriter(dir, g.NumNodes(), chunkSize, chunkfmt.Options{Dedup: dedup, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < g.NumNodes(); v++ {
		nb, _ := g.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t testing.TB, dir string, o randread.Options) *randread.Sampler {
	t.Helper()
	s, err := randread.Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// diffResult names the first difference between two epochs.
func diffResult(a, b *epoch.Result) error {
	if a.Key != b.Key || len(a.Layers) != len(b.Layers) {
		return fmt.Errorf("key %+v/%+v, %d/%d layers", a.Key, b.Key, len(a.Layers), len(b.Layers))
	}
	for l := range a.Layers {
		x, y := &a.Layers[l], &b.Layers[l]
		switch {
		case !slices.Equal(x.Frontier, y.Frontier):
			return fmt.Errorf("layer %d: frontiers differ (%d/%d nodes)", l, len(x.Frontier), len(y.Frontier))
		case x.Fanout != y.Fanout:
			return fmt.Errorf("layer %d: fanout %d/%d", l, x.Fanout, y.Fanout)
		case (x.EdgeIDs == nil) != (y.EdgeIDs == nil):
			return fmt.Errorf("layer %d: edge ids in one only", l)
		case !slices.Equal(x.Offsets, y.Offsets) || (x.Offsets == nil) != (y.Offsets == nil):
			return fmt.Errorf("layer %d: row offsets differ (%d/%d)", l, len(x.Offsets), len(y.Offsets))
		case len(x.Samples) != len(y.Samples) || len(x.EdgeIDs) != len(y.EdgeIDs):
			return fmt.Errorf("layer %d: %d/%d samples, %d/%d edge ids", l, len(x.Samples), len(y.Samples), len(x.EdgeIDs), len(y.EdgeIDs))
		}
		for i := range x.Frontier {
			lo, hi := x.Span(i)
			for j := lo; j < hi; j++ {
				if x.Samples[j] != y.Samples[j] || x.EdgeIDs != nil && x.EdgeIDs[j] != y.EdgeIDs[j] {
					return fmt.Errorf("layer %d node %d slot %d: sample %d/%d", l, x.Frontier[i], j-lo, x.Samples[j], y.Samples[j])
				}
			}
		}
	}
	if !slices.Equal(a.Final, b.Final) {
		return fmt.Errorf("final frontiers differ")
	}
	return nil
}

// TestEqualsReference: on random graphs (hubs, isolated nodes, repeated
// neighbors) packed into chunks of every size from one sector up, read in
// blocks of 512 bytes and 4 KiB (so adjacency lists cross block
// boundaries, and the last chunk ends inside a block), through randread.AIO and
// pread, O_DIRECT and buffered, with and without replacement, the
// random-read epoch equals host.ReferenceEdgeIDs' bit for bit, edge ids
// included.
func TestEqualsReference(t *testing.T) {
	for _, repeats := range []bool{false, true} {
		indptr, indices := testgraph.RandomCSR(3000, 12, 7)
		if repeats {
			indptr, indices = testgraph.RandomRepeatsCSR(3000, 12, 8)
		}
		g := &host.CSR{Indptr: indptr, Indices: indices}
		for _, chunk := range []int64{1 << 14, 1 << 16, 1 << 20} {
			dir := writeGraph(t, g, chunk, !repeats)
			for _, o := range []randread.Options{
				{BlockSize: 4096},
				{BlockSize: 512, IO: randread.Pread},
				{BlockSize: 512, Depth: 3},
				{BlockSize: 4096, IO: randread.Pread, Buffered: true},
				{BlockSize: 1 << 16, MaxRun: 1 << 16},
				{BlockSize: 4096, Kernel: true},
				{BlockSize: 512, Kernel: true, IO: randread.Pread, MaxRun: 512},
			} {
				s := open(t, dir, o)
				for trial, replace := range []bool{false, true, false} {
					key := epoch.Key{Seed: uint64(trial) + 3, Epoch: uint32(trial), Replace: replace}
					seeds := testgraph.RandomSeeds(g.NumNodes(), 20+40*trial, uint64(trial))
					seeds = append(seeds, 0, g.NumNodes()-1)
					fanouts := [][]int{{15, 10, 5}, {3}, {64, 1}}[trial]
					want, err := host.ReferenceEdgeIDs(g, seeds, fanouts, key)
					if err != nil {
						t.Fatal(err)
					}
					got, st, err := s.Sample(context.Background(), randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: true})
					if err != nil {
						t.Fatal(err)
					}
					if err := diffResult(got, want); err != nil {
						t.Fatalf("repeats %v chunk %d options %+v trial %d: %v", repeats, chunk, o, trial, err)
					}
					if err := got.Validate(); err != nil {
						t.Fatal(err)
					}
					if len(st.Layers) != len(fanouts) || st.Blocks() == 0 || st.Reads() > st.Blocks() {
						t.Fatalf("stats %+v", st)
					}
					// Without edge ids: the same samples, no edge ids.
					plain, _, err := s.Sample(context.Background(), randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key})
					if err != nil {
						t.Fatal(err)
					}
					ref, _ := host.Reference(g, seeds, fanouts, key)
					if err := diffResult(plain, ref); err != nil {
						t.Fatalf("without edge ids: %v", err)
					}
				}
			}
		}
	}
}

// TestLayersReuseBlocks: a node sampled again at a later layer (every
// node of frontier_l is in frontier_{l+1}) needs no new read of the
// blocks its first sample read; and with the whole graph in few blocks,
// no block is read twice in a request.
func TestLayersReuseBlocks(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(500, 6, 3)
	g := &host.CSR{Indptr: indptr, Indices: indices}
	s := open(t, writeGraph(t, g, 1<<16, true), randread.Options{BlockSize: 512})
	_, st, err := s.Sample(context.Background(), randread.Request{Seeds: []uint32{1, 2, 3}, Fanouts: []int{4, 4, 4, 4}, Key: epoch.Key{Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Layers[1].Reused == 0 {
		t.Fatalf("layer 1 reused no block of layer 0: %+v", st.Layers)
	}
	fileBlocks := s.NumBlocks()
	if st.Blocks() > fileBlocks {
		t.Fatalf("%d blocks read, the file has %d", st.Blocks(), fileBlocks)
	}
	if st.BytesRead() != st.Blocks()*512 {
		t.Fatalf("%d bytes read for %d blocks", st.BytesRead(), st.Blocks())
	}
}

// TestEqualsStreamed: the random-read epoch equals the streaming
// sampler's (host.Sampler, the emulated SmartSSD running the HLS kernel)
// for the same seeds and key, edge ids included, on graphs built from the
// bundled data sets into several chunks; and the minibatch Blocks
// assembles for seeds drawn from a larger training set equals the one
// assembled from the streamed epoch of that training set, under both
// semantics — what `sample --graph` and `sample --state` print.
func TestEqualsStreamed(t *testing.T) {
	graphs := []string{"email-Eu-core.txt.gz", "Wiki-Vote.txt", "planetoid/cora.edges.txt.gz"}
	for _, name := range graphs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			if _, err := ingest.Build(context.Background(), []string{filepath.Join("..", "testdata", name)}, dir,
				ingest.BuildOptions{Reverse: true, ChunkSize: 64 << 10}); err != nil {
				t.Fatal(err)
			}
			hs, err := host.Open(dir, host.Options{EdgeIDs: true})
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Close()
			s := open(t, dir, randread.Options{})
			n := s.NumNodes()
			var train []uint32
			for v := uint32(0); v < n; v += 3 {
				train = append(train, v)
			}
			r := rand.New(rand.NewPCG(uint64(n), 5))
			for _, replace := range []bool{false, true} {
				key := epoch.Key{Seed: 11, Epoch: 4, Replace: replace}
				fanouts := []int{15, 10, 5}
				streamed, err := hs.SampleEpoch(context.Background(), train, fanouts, key)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := s.Sample(context.Background(), randread.Request{Seeds: train, Fanouts: fanouts, Key: key, EdgeIDs: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := diffResult(got, streamed); err != nil {
					t.Fatalf("replace %v: whole epoch: %v", replace, err)
				}
				for trial := 0; trial < 10; trial++ {
					seeds := epochtest.Pick(r, train, 1+r.IntN(64))
					for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
						want, err := streamed.Assemble(seeds, sem)
						if err != nil {
							t.Fatal(err)
						}
						b, _, err := s.Blocks(context.Background(), randread.Request{Seeds: seeds, Fanouts: fanouts, Key: key, EdgeIDs: true}, sem)
						if err != nil {
							t.Fatal(err)
						}
						if err := epochtest.EqualBlocks(b, want); err != nil || b.Semantics != want.Semantics {
							t.Fatalf("replace %v trial %d %v: %v", replace, trial, sem, err)
						}
					}
				}
			}
		})
	}
}

// TestRequestErrors: bad requests are refused before anything is read,
// with errors that name what is wrong.
func TestRequestErrors(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(100, 4, 1)
	g := &host.CSR{Indptr: indptr, Indices: indices}
	s := open(t, writeGraph(t, g, 4096, true), randread.Options{})
	ctx := context.Background()
	for _, c := range []struct {
		req  randread.Request
		want string
		is   error
	}{
		{randread.Request{Seeds: []uint32{3, 100}, Fanouts: []int{2}}, "seed 100 (position 1) is not a node: the graph has 100 nodes (0..99)", randread.ErrInvalid},
		{randread.Request{Seeds: []uint32{3}, Fanouts: nil}, "no fanouts", randread.ErrInvalid},
		{randread.Request{Seeds: []uint32{3}, Fanouts: []int{2, 0}}, "fanout 0 of layer 1 (hop 2), want 1..64 or -1 (every neighbor)", randread.ErrInvalid},
		{randread.Request{Seeds: []uint32{3}, Fanouts: []int{65}}, "fanout 65 of layer 0 (hop 1), want 1..64 or -1 (every neighbor)", randread.ErrInvalid},
		{randread.Request{Seeds: []uint32{3}, Fanouts: []int{-2}}, "fanout -2 of layer 0 (hop 1), want 1..64 or -1", randread.ErrInvalid},
		{randread.Request{Seeds: []uint32{3, 4, 3}, Fanouts: []int{2}}, "seed 3 at positions 0 and 2", epoch.ErrDuplicateSeed},
	} {
		_, _, err := s.Blocks(ctx, c.req, epoch.DGL)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q (%v)", c.req, err, c.want, c.is)
		}
	}
	// Sample takes repeated seeds (an epoch's frontier is their set).
	if _, _, err := s.Sample(ctx, randread.Request{Seeds: []uint32{3, 3}, Fanouts: []int{2}}); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Sample(ctx2, randread.Request{Seeds: []uint32{3}, Fanouts: []int{2}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	s.Close()
	if _, _, err := s.Sample(ctx, randread.Request{Seeds: []uint32{3}, Fanouts: []int{2}}); !errors.Is(err, randread.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := randread.Open(ctx, t.TempDir(), randread.Options{}); !errors.Is(err, chunkfmt.ErrNoManifest) {
		t.Fatalf("no graph: %v", err)
	}
	if _, err := randread.Open(ctx, t.TempDir(), randread.Options{BlockSize: 1000}); !errors.Is(err, randread.ErrInvalid) {
		t.Fatalf("block size 1000: %v", err)
	}
}

// TestCorrupt: a header that disagrees with the manifest fails randread.Open with
// an error naming the chunk and the word; a neighbor word that is not a
// node fails the sample that reads it, naming the node, whether Go or the
// gather kernel gathers it.
func TestCorrupt(t *testing.T) {
	g := &host.CSR{Indptr: []uint64{0, 2, 3, 3, 6}, Indices: []uint32{1, 2, 2, 0, 1, 2}}
	for _, c := range []struct {
		word  int64
		value uint32
		open  bool
		want  string
	}{
		{0, 9, true, "chunk 0 (nodes 0..3): header word 0 (n_nodes) is 9, manifest says 4"},
		{2, 8, true, "node 0: off_0 is 8, want 3 + n_nodes = 7"},
		{4, 8, true, "node 1: offset 8 below the previous 9"},
		{6, 12, true, "off_4 (one past the last neighbor) is 12, want bytes_used/4 = 13"},
		{10, 77, false, "node 3: neighbor 77 (position 0) at word 10 is not a node: the graph has 4 nodes"}, // through the gather kernel
		{12, 4, false, "node 3: neighbor 4 (position 2) at word 12 is not a node: the graph has 4 nodes"},
	} {
		dir := writeGraph(t, g, 512, true)
		path := filepath.Join(dir, chunkfmt.ChunksFile)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], c.value)
		if _, err := f.WriteAt(b[:], 4*c.word); err != nil {
			t.Fatal(err)
		}
		f.Close()
		s, err := randread.Open(context.Background(), dir, randread.Options{Kernel: c.word == 10})
		if !c.open {
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = s.Sample(context.Background(), randread.Request{Seeds: []uint32{3}, Fanouts: []int{3}})
			s.Close()
		}
		if !errors.Is(err, chunkfmt.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("word %d = %d: %v, want %q", c.word, c.value, err, c.want)
		}
	}
}

// TestDegreeAndOffsets: the offsets loaded from the headers are the
// graph's CSR offsets.
func TestDegreeAndOffsets(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(2000, 9, 4)
	g := &host.CSR{Indptr: indptr, Indices: indices}
	s := open(t, writeGraph(t, g, 8192, true), randread.Options{})
	for v := uint32(0); v < g.NumNodes(); v++ {
		if s.Degree(v) != int(indptr[v+1]-indptr[v]) || s.FirstEdge(v) != indptr[v] {
			t.Fatalf("node %d", v)
		}
	}
	if s.OffsetBytes() != 8*int64(len(indptr)) {
		t.Fatal(s.OffsetBytes())
	}
}

// TestIsolatedAndHub: a seed of degree 0 gets empty rows and reads
// nothing; a hub whose list spans many blocks (20 KB: 40 of 512 bytes),
// with neighbors of degree 0 and 2, is sampled as the reference samples
// it, with and without replacement, edge ids included.
func TestIsolatedAndHub(t *testing.T) {
	const hubDeg = 5000
	adj := make([][]uint32, hubDeg+2)
	for v := range hubDeg {
		adj[1] = append(adj[1], uint32(v+2)) // node 0 isolated; 1 the hub
	}
	for v := 2; v < hubDeg+2; v += 7 {
		adj[v] = []uint32{1, uint32(v)}
	}
	indptr, indices := testgraph.FromAdjacency(adj)
	g := &host.CSR{Indptr: indptr, Indices: indices}
	for _, bs := range []int{512, 4096} {
		s := open(t, writeGraph(t, g, 1<<15, true), randread.Options{BlockSize: bs})
		res, st, err := s.Sample(context.Background(), randread.Request{Seeds: []uint32{0}, Fanouts: []int{5, 5}, Key: epoch.Key{Seed: 1}, EdgeIDs: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, ly := range res.Layers {
			for i := range ly.Samples {
				if ly.Samples[i] != -1 || ly.EdgeIDs[i] != -1 {
					t.Fatalf("isolated seed: sample %d, edge id %d", ly.Samples[i], ly.EdgeIDs[i])
				}
			}
		}
		if st.Reads() != 0 || st.Blocks() != 0 || !slices.Equal(res.Final, []uint32{0}) {
			t.Fatalf("isolated seed: %d reads, %d blocks, final %v", st.Reads(), st.Blocks(), res.Final)
		}
		for _, replace := range []bool{false, true} {
			key := epoch.Key{Seed: 3, Epoch: 2, Replace: replace}
			for _, seeds := range [][]uint32{{1}, {0, 1, 9}, {9, 100, 4999}} {
				got, _, err := s.Sample(context.Background(), randread.Request{Seeds: seeds, Fanouts: []int{64, 3}, Key: key, EdgeIDs: true})
				if err != nil {
					t.Fatal(err)
				}
				want, err := host.ReferenceEdgeIDs(g, seeds, []int{64, 3}, key)
				if err != nil {
					t.Fatal(err)
				}
				if err := diffResult(got, want); err != nil {
					t.Fatalf("block %d replace %v seeds %v: %v", bs, replace, seeds, err)
				}
			}
		}
	}
}
