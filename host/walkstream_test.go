package host

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestStreamedWalksEqualReference is the walk backends' core property: the
// walks streamed through emulated devices equal ReferenceWalks' exactly,
// in every mode, whatever the chunking, the number of devices and the
// launch size, on a multigraph with dangling nodes.
func TestStreamedWalksEqualReference(t *testing.T) {
	g := randomRepeatsCSR(1500, 6, 21)
	var starts []uint32
	for v := uint32(0); v < 1500; v += 7 {
		starts = append(starts, v)
	}
	slices.Reverse(starts) // any order
	modes := []WalkConfig{
		{Mode: WalkDeepWalk, Length: 12, WalksPerNode: 3, Seed: 1},
		{Mode: WalkPPR, Length: 12, WalksPerNode: 2, Seed: 2, Restart: 0.2},
		{Mode: WalkPPR, Length: 12, WalksPerNode: 2, Seed: 3, Restart: 0.3, StopAtRestart: true},
		{Mode: WalkNode2Vec, Length: 10, WalksPerNode: 2, Seed: 4, P: 0.5, Q: 2},
		{Mode: WalkNode2Vec, Length: 10, WalksPerNode: 2, Seed: 5, P: 4, Q: 0.25},
		// Far and return candidates rarely accepted: many blocks per step,
		// and walkers at the attempt cap.
		{Mode: WalkNode2Vec, Length: 6, WalksPerNode: 2, Seed: 6, P: 50, Q: 50},
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
				want, err := ReferenceWalks(g, starts, c)
				if err != nil {
					t.Fatal(err)
				}
				got, st, err := s.Walks(context.Background(), starts, c)
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
				if len(st.Layers) < c.Length {
					t.Fatalf("stats: %d passes for %d steps", len(st.Layers), c.Length)
				}
				for _, ls := range st.Layers {
					if ls.Targets > 0 && ls.ChunksRead+ls.ChunksReused == 0 {
						t.Fatalf("step %d: a pass of %d targets read no chunk", ls.Layer, ls.Targets)
					}
				}
			})
		}
	}
}

// TestStreamedWalksErrors: bad configurations and starts are refused
// before any pass.
func TestStreamedWalksErrors(t *testing.T) {
	g := randomCSR(100, 4, 3)
	s := openSampler(t, writeGraph(t, g, 4096), Options{})
	for name, c := range map[string]struct {
		starts []uint32
		cfg    WalkConfig
		out    int
	}{
		"no length":    {[]uint32{1}, WalkConfig{WalksPerNode: 1}, 0},
		"start beyond": {[]uint32{100}, WalkConfig{Length: 2, WalksPerNode: 1}, 3},
		"output size":  {[]uint32{1}, WalkConfig{Length: 2, WalksPerNode: 1}, 4},
	} {
		if _, err := s.WalksInto(context.Background(), c.starts, c.cfg, make([]int32, c.out)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestStreamedWalksIntoOverwrites: WalksInto writes every entry of its
// output (the start, each step, the -1 padding of an ended walk), so that
// an output holding anything before (a reused buffer, a mapped file)
// ends equal to ReferenceWalks', however many steps it stages at once
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
	for _, c := range []WalkConfig{
		{Mode: WalkDeepWalk, Length: 9, WalksPerNode: 2, Seed: 3},
		{Mode: WalkPPR, Length: 9, WalksPerNode: 2, Seed: 4, Restart: 0.3, StopAtRestart: true},
		{Mode: WalkNode2Vec, Length: 9, WalksPerNode: 2, Seed: 5, P: 0.5, Q: 2},
		{Mode: WalkPPR, Length: 40, WalksPerNode: 1, Seed: 6, Restart: 0.9, StopAtRestart: true}, // all end early
	} {
		want, err := ReferenceWalks(g, starts, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(want, -1) {
			t.Fatalf("%v: no walk ends early: the test does not test the padding", c)
		}
		nw := NumWalks(len(starts), c)
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
				t.Fatalf("%v, %d steps staged: WalksInto over a dirty output differs from ReferenceWalks", c, steps)
			}
		}
	}
	// The all-ended case must really end every walk before its last step.
	c := WalkConfig{Mode: WalkPPR, Length: 40, WalksPerNode: 1, Seed: 6, Restart: 0.9, StopAtRestart: true}
	want, _ := ReferenceWalks(g, starts, c)
	for w := range len(starts) {
		if want[w*41+40] != -1 {
			t.Fatalf("walk %d reaches step 40: the all-ended case does not end them all", w)
		}
	}
}
