package host

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/testgraph"
	"github.com/streamsampler/streamsampler/walk"
)

// randomRepeatsCSR is testgraph.RandomRepeatsCSR as a CSR.
func randomRepeatsCSR(n uint32, avgDeg int, seed uint64) *CSR {
	indptr, indices := testgraph.RandomRepeatsCSR(n, avgDeg, seed)
	return &CSR{Indptr: indptr, Indices: indices}
}

// streamWalks is s.WalksInto into a fresh output.
func streamWalks(s *Sampler, starts []uint32, c walk.Config) ([]int32, *walk.Stats, error) {
	out := make([]int32, c.OutputLen(len(starts)))
	st, err := s.WalksInto(context.Background(), starts, c, out)
	if err != nil {
		return nil, nil, err
	}
	return out, st, nil
}

// TestStreamedWalksEqualReference is the walk backends' core property: the
// walks streamed through emulated devices equal walk.Reference's exactly,
// in every mode, whatever the chunking, the number of devices and the
// launch size, on a multigraph with dangling nodes.
func TestStreamedWalksEqualReference(t *testing.T) {
	g := randomRepeatsCSR(1500, 6, 21)
	var starts []uint32
	for v := uint32(0); v < 1500; v += 7 {
		starts = append(starts, v)
	}
	slices.Reverse(starts) // any order
	modes := []walk.Config{
		{Mode: walk.DeepWalk, Length: 12, WalksPerNode: 3, Seed: 1},
		{Mode: walk.PPR, Length: 12, WalksPerNode: 2, Seed: 2, Restart: 0.2},
		{Mode: walk.PPR, Length: 12, WalksPerNode: 2, Seed: 3, Restart: 0.3, StopAtRestart: true},
		{Mode: walk.Node2Vec, Length: 10, WalksPerNode: 2, Seed: 4, P: 0.5, Q: 2},
		{Mode: walk.Node2Vec, Length: 10, WalksPerNode: 2, Seed: 5, P: 4, Q: 0.25},
		// Far and return candidates rarely accepted: many blocks per step,
		// and walkers at the attempt cap.
		{Mode: walk.Node2Vec, Length: 6, WalksPerNode: 2, Seed: 6, P: 50, Q: 50},
	}
	for _, layout := range []struct {
		chunk      int64
		devices    int
		maxTargets int
	}{{1 << 20, 1, 0}, {4096, 3, 0}, {2048, 2, 37}} {
		dir := writeMultigraph(t, g, layout.chunk)
		s := openSampler(t, dir, Options{Devices: layout.devices, MaxTargets: layout.maxTargets})
		for _, c := range modes {
			t.Run(fmt.Sprintf("chunk=%d,devices=%d,mt=%d/%v", layout.chunk, layout.devices, layout.maxTargets, c), func(t *testing.T) {
				want, err := walk.Reference(g, starts, c)
				if err != nil {
					t.Fatal(err)
				}
				got, st, err := streamWalks(s, starts, c)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					row := c.Length + 1
					for w := 0; w < len(want)/row; w++ {
						if !slices.Equal(got[w*row:(w+1)*row], want[w*row:(w+1)*row]) {
							t.Fatalf("walk %d: streamed %v, reference %v", w, got[w*row:(w+1)*row], want[w*row:(w+1)*row])
						}
					}
				}
				if len(st.Passes) < c.Length {
					t.Fatalf("stats: %d passes for %d steps", len(st.Passes), c.Length)
				}
				for _, ls := range st.Passes {
					if ls.Targets > 0 && ls.ChunksRead+ls.ChunksReused == 0 {
						t.Fatalf("step %d: a pass of %d targets read no chunk", ls.Step, ls.Targets)
					}
				}
			})
		}
	}
}

// TestStreamedWalksErrors: bad configurations and starts are refused
// before any pass, as a bad request (ErrInvalid and walk.ErrInvalid).
func TestStreamedWalksErrors(t *testing.T) {
	g := randomCSR(100, 4, 3)
	s := openSampler(t, writeGraph(t, g, 4096), Options{})
	for name, c := range map[string]struct {
		starts []uint32
		cfg    walk.Config
		out    int
	}{
		"no length":    {[]uint32{1}, walk.Config{WalksPerNode: 1}, 0},
		"start beyond": {[]uint32{100}, walk.Config{Length: 2, WalksPerNode: 1}, 3},
		"output size":  {[]uint32{1}, walk.Config{Length: 2, WalksPerNode: 1}, 4},
	} {
		_, err := s.WalksInto(context.Background(), c.starts, c.cfg, make([]int32, c.out))
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if !errors.Is(err, ErrInvalid) || !errors.Is(err, walk.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid and walk.ErrInvalid", name, err)
		}
	}
}

// TestStreamedWalksIntoOverwrites: WalksInto writes every entry of its
// output (the start, each step, the -1 padding of an ended walk), so that
// an output holding anything before (a reused buffer, a mapped file)
// ends equal to walk.Reference's, however many steps it stages at once
// (one, a few that do not divide the length, all), and when every walk
// ends before the last step.
func TestStreamedWalksIntoOverwrites(t *testing.T) {
	g := randomRepeatsCSR(800, 4, 8) // with dangling nodes: walks end early
	var starts []uint32
	for v := uint32(0); v < 800; v += 3 {
		starts = append(starts, v)
	}
	s := openSampler(t, writeMultigraph(t, g, 4096), Options{Devices: 2})
	orig := walkStageBytes
	t.Cleanup(func() { walkStageBytes = orig })
	for _, c := range []walk.Config{
		{Mode: walk.DeepWalk, Length: 9, WalksPerNode: 2, Seed: 3},
		{Mode: walk.PPR, Length: 9, WalksPerNode: 2, Seed: 4, Restart: 0.3, StopAtRestart: true},
		{Mode: walk.Node2Vec, Length: 9, WalksPerNode: 2, Seed: 5, P: 0.5, Q: 2},
		{Mode: walk.PPR, Length: 40, WalksPerNode: 1, Seed: 6, Restart: 0.9, StopAtRestart: true}, // all end early
	} {
		want, err := walk.Reference(g, starts, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(want, -1) {
			t.Fatalf("%v: no walk ends early: the test does not test the padding", c)
		}
		nw := walk.NumWalks(len(starts), c)
		for _, steps := range []int{1, 2, 4, 16} {
			walkStageBytes = int64(4 * nw * steps)
			if got := walkStageSteps(nw, c.Length); got != min(steps, c.Length) {
				t.Fatalf("%d walks, %d bytes: stages %d steps, want %d", nw, walkStageBytes, got, min(steps, c.Length))
			}
			out := make([]int32, len(want))
			for i := range out {
				out[i] = 12345
			}
			if _, err := s.WalksInto(context.Background(), starts, c, out); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, want) {
				t.Fatalf("%v, %d steps staged: WalksInto over a dirty output differs from walk.Reference", c, steps)
			}
		}
	}
	// The all-ended case must really end every walk before its last step.
	c := walk.Config{Mode: walk.PPR, Length: 40, WalksPerNode: 1, Seed: 6, Restart: 0.9, StopAtRestart: true}
	want, _ := walk.Reference(g, starts, c)
	for w := range len(starts) {
		if want[w*41+40] != -1 {
			t.Fatalf("walk %d reaches step 40: the all-ended case does not end them all", w)
		}
	}
}

// TestMembershipPass: node2vec's membership pass (neighborsOf), reading
// through the lanes' chunk reader, answers "is x in u's adjacency" as the
// graph does, over many chunks and pass after pass with its buffers
// reused; a cancelled context stops it, and a chunk that fails its
// checksum fails it naming the chunk. A pass that stops early leaves no
// reader behind: the next one reuses the buffers (under -race, a reader
// still running would be a race).
func TestMembershipPass(t *testing.T) {
	g := randomRepeatsCSR(1500, 6, 21)
	dir := writeMultigraph(t, g, 4096)
	s := openSampler(t, dir, Options{})
	chunks := len(s.manifest.Chunks)
	if chunks < 4 {
		t.Fatalf("%d chunks: the test wants several", chunks)
	}
	w := &streamWalker{s: s, st: &walk.Stats{}, step: 2}
	r := rand.New(rand.NewPCG(1, 2))
	queries := func(m int, chunk int) (us, xs []uint32) {
		us, xs = make([]uint32, m), make([]uint32, m)
		for q := range m {
			u := uint32(r.IntN(int(g.NumNodes())))
			for chunk >= 0 && s.index.ChunkOf(u) != chunk {
				u = uint32(r.IntN(int(g.NumNodes())))
			}
			nb, _ := g.Neighbors(u)
			x := uint32(r.IntN(int(g.NumNodes())))
			if len(nb) > 0 && r.IntN(2) == 0 {
				x = nb[r.IntN(len(nb))]
			}
			us[q], xs[q] = u, x
		}
		return us, xs
	}
	ctx := context.Background()
	for pass := range 3 {
		us, xs := queries(4000, -1)
		near, err := w.neighborsOf(ctx, us, xs)
		if err != nil {
			t.Fatal(err)
		}
		yes := 0
		for q := range us {
			nb, _ := g.Neighbors(us[q])
			if want := walk.IsNeighbor(nb, xs[q]); near[q] != want {
				t.Fatalf("pass %d, query %d: is %d a neighbor of %d: %v, want %v", pass, q, xs[q], us[q], near[q], want)
			}
			if near[q] {
				yes++
			}
		}
		if yes == 0 || yes == len(us) {
			t.Fatalf("pass %d: %d of %d queries near: the test tests one answer only", pass, yes, len(us))
		}
		p := w.st.Passes[len(w.st.Passes)-1]
		if !p.Membership || p.Step != 2 || p.Targets != len(us) || p.ChunksRead+p.ChunksSkipped != chunks || p.BytesRead <= 0 {
			t.Fatalf("pass %d: statistics %+v; want a membership pass over the %d chunks", pass, p, chunks)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	us, xs := queries(1000, -1)
	if _, err := w.neighborsOf(cctx, us, xs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}

	editWord(1, midAdjacency(1), func(v uint32) uint32 { return v ^ 1 })(t, dir, s.manifest)
	us, xs = queries(1000, -1)
	if _, err := w.neighborsOf(ctx, us, xs); !errors.Is(err, chunkfmt.ErrChecksum) || !strings.Contains(err.Error(), "chunk 1") {
		t.Fatalf("a corrupt chunk 1: %v, want a checksum error naming it", err)
	}
	us, xs = queries(1000, 0) // chunk 0 alone, still whole
	if _, err := w.neighborsOf(ctx, us, xs); err != nil {
		t.Fatalf("after a failed pass: %v", err)
	}
}
