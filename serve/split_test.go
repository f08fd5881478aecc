package serve

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/pipeline"
)

// TestSplitsAndSemantics: a split serves its nodes in the given order,
// each once, in both semantics, each minibatch equal to the assembly of
// an independent sample of the split under the current epoch's key, with
// the store's rows; next_batch of the other semantics than the plan's
// gets its own rows while the plan's later minibatches keep theirs.
func TestSplitsAndSemantics(t *testing.T) {
	g := randomCSR(2000, 8, 9)
	fs := featureGraph(t, g, 5, featstore.Float32)
	cfg := Config{
		Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(2000, 4), Fanouts: []int{4, 3}, Seed: 7},
			BatchSize: 40, Epochs: 3, Features: &pipeline.FeaturePlanning{CacheRows: 200, RowBytes: fs.RowBytes()}},
		Sampler: &refSampler{g: g}, NumNodes: 2000, Features: fs,
	}
	s := newTestServer(t, cfg)
	cl := dial(t, serveUnix(t, s))

	// Training minibatches, alternating semantics: each equals the
	// reference assembly, and every row is the store's.
	info, err := cl.EpochInfo()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := host.Reference(g, cfg.Train, cfg.Fanouts, cfg.Key(info.Epoch))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		sem := []epoch.Semantics{epoch.PyG, epoch.DGL, DefaultSemantics}[i%3]
		b, err := cl.NextBatchAs(info.Epoch, sem)
		if err != nil {
			t.Fatal(err)
		}
		if b.End {
			break
		}
		want, err := epoch.NewAssembler(ref, nil).Assemble(b.Blocks.Seeds, s.semantics(sem))
		if err != nil {
			t.Fatal(err)
		}
		if !sameBlocks(b.Blocks, want) {
			t.Fatalf("minibatch %d (%v) differs from the reference assembly", b.Index, sem)
		}
		checkFeatures(t, fs, b.Blocks, b.Features)
	}

	// A split of nodes in no particular order, training nodes among them.
	r := rand.New(rand.NewPCG(3, 3))
	nodes := make([]uint32, 0, 333)
	for _, v := range r.Perm(2000)[:333] {
		nodes = append(nodes, uint32(v))
	}
	sp, err := cl.Split(nodes, 50)
	if err != nil {
		t.Fatal(err)
	}
	if sp.NumNodes != 333 || sp.BatchSize != 50 || sp.NumBatches != 7 {
		t.Fatalf("split info %+v", sp)
	}
	if again, err := cl.Split(nodes, 50); err != nil || again.Split != sp.Split {
		t.Fatalf("the same split again: %+v, %v", again, err)
	}
	for _, sem := range []epoch.Semantics{epoch.PyG, epoch.DGL} {
		var got []uint32
		for i := uint32(0); ; i++ {
			b, err := cl.SplitBatch(sp.Split, i, sem)
			if err != nil {
				t.Fatal(err)
			}
			if b.End {
				if i != 7 {
					t.Fatalf("split ended after %d minibatches, want 7", i)
				}
				break
			}
			sorted := slices.Sorted(slices.Values(nodes))
			ref, err := host.Reference(g, sorted, cfg.Fanouts, cfg.Key(b.Epoch))
			if err != nil {
				t.Fatal(err)
			}
			want, err := epoch.NewAssembler(ref, nil).Assemble(b.Blocks.Seeds, sem)
			if err != nil {
				t.Fatal(err)
			}
			if b.Index != int(i) || !sameBlocks(b.Blocks, want) {
				t.Fatalf("split minibatch %d (%v) differs from the reference assembly", i, sem)
			}
			checkFeatures(t, fs, b.Blocks, b.Features)
			got = append(got, b.Blocks.Seeds...)
		}
		if !slices.Equal(got, nodes) {
			t.Fatalf("%v: split seeds are not the nodes in order, each once", sem)
		}
	}

	// Errors: an unknown split, repeated nodes, nodes outside the graph.
	var re *RemoteError
	if _, err := cl.SplitBatch(99, 0, epoch.PyG); !errors.As(err, &re) || re.Code != CodeUnknownSplit {
		t.Fatalf("unknown split: %v", err)
	}
	if _, err := cl.Split([]uint32{4, 9, 4}, 2); !errors.As(err, &re) || re.Code != CodeBadRequest {
		t.Fatalf("repeated node: %v", err)
	}
	if _, err := cl.Split([]uint32{4, 2000}, 2); !errors.As(err, &re) || re.Code != CodeBadRequest {
		t.Fatalf("node outside the graph: %v", err)
	}
	if _, err := cl.Split(nil, 2); !errors.As(err, &re) || re.Code != CodeBadRequest {
		t.Fatalf("empty split: %v", err)
	}
	if _, err := s.SplitBatch(context.Background(), sp.Split, 7, epoch.PyG); err != nil {
		t.Fatalf("past the end: %v", err)
	}
}

// sameBlocks compares two minibatches' semantics, seeds and hops.
func sameBlocks(a, b *epoch.Blocks) bool {
	if a.Semantics != b.Semantics || a.Epoch != b.Epoch || !slices.Equal(a.Seeds, b.Seeds) || len(a.Hops) != len(b.Hops) {
		return false
	}
	for h := range a.Hops {
		x, y := &a.Hops[h], &b.Hops[h]
		if !slices.Equal(x.Dst, y.Dst) || !slices.Equal(x.Src, y.Src) || !slices.Equal(x.EdgeSrc, y.EdgeSrc) ||
			!slices.Equal(x.EdgeDst, y.EdgeDst) || !slices.Equal(x.EdgeIDs, y.EdgeIDs) {
			return false
		}
	}
	return true
}

// TestDefaultBudgetHoldsEverySplit: with the default in-flight budget, a
// server holds splits of every node of its graph at once (a PyG script's
// validation and test loaders register theirs unasked: 20% of a million
// nodes was refused with the old fixed 256 MiB), within the memory the
// process may use; an explicit budget is kept as given.
func TestDefaultBudgetHoldsEverySplit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int64
		set   int64
	}{
		{"small graph: the fixed default", 1000, 0},
		{"a million nodes: room for every split", 1_000_000, 0},
		{"explicit budget kept", 1_000_000, 512 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Config: pipeline.Config{Sampling: epoch.Sampling{Train: trainNodes(1000, 4), Fanouts: []int{15, 10}}, BatchSize: 1024}, EdgeIDs: true,
				Sampler: &refSampler{}, NumNodes: tc.nodes, MaxInflight: tc.set}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := s.cfg.MaxInflight
			need := maxSplitShare * s.splitBytes(tc.nodes)
			switch {
			case tc.set != 0:
				if got != tc.set {
					t.Errorf("MaxInflight %d, set %d", got, tc.set)
				}
			case need <= DefaultMaxInflight:
				if got != DefaultMaxInflight {
					t.Errorf("MaxInflight %d, want the default %d", got, DefaultMaxInflight)
				}
			default:
				if capped := memavail.Available(); capped > 0 && need > capped {
					need = capped
				}
				if got != need {
					t.Errorf("MaxInflight %d, want %d (4 × the bound of a split of all %d nodes, at most the memory)", got, need, tc.nodes)
				}
			}
		})
	}
}
