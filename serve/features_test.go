package serve

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/host"
)

// featureGraph writes g as a graph directory with a feature store of
// random rows (dim elements of dt) and labels, and opens the store.
func featureGraph(t *testing.T, g *host.CSR, dim int, dt featstore.DType) *featstore.Store {
	t.Helper()
	n := uint32(len(g.Indptr) - 1)
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, n, 64<<10, chunkfmt.Options{Symmetrize: true, Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := range n {
		nb, _ := g.Neighbors(v)
		if err := w.Append(nb); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fw, err := featstore.Create(dir, featstore.Options{DType: dt, Dim: dim, Labels: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(dim), 7))
	row := make([]byte, fw.RowBytes())
	labels := make([]int32, n)
	for v := range n {
		for i := range row {
			row[i] = byte(r.Uint32())
		}
		if err := fw.Append(row); err != nil {
			t.Fatal(err)
		}
		labels[v] = int32(r.IntN(5)) - 1
	}
	if err := fw.AppendLabels(labels); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	fs, err := featstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// checkFeatures checks that f holds exactly the store's rows of b's nodes
// (its last hop's src) and its seeds' labels.
func checkFeatures(t *testing.T, fs *featstore.Store, b *epoch.Blocks, f *Features) {
	t.Helper()
	if f == nil {
		t.Fatal("a reply without features")
	}
	nodes := b.Hops[len(b.Hops)-1].Src
	want := make([]byte, int64(len(nodes))*fs.RowBytes())
	if err := fs.ReadRows(nodes, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.X, want) || f.Dim != fs.Dim() || f.DType != featureDTypes[fs.DType()] {
		t.Fatalf("epoch %d: feature rows differ from the store's (dim %d, dtype %d)", b.Epoch, f.Dim, f.DType)
	}
	wy := make([]int32, len(b.Seeds))
	if err := fs.ReadLabels(b.Seeds, wy); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Y, wy) {
		t.Fatalf("epoch %d: labels differ", b.Epoch)
	}
}

// TestServeFeatures: with a feature store, every minibatch that several
// concurrent clients take over two epochs, and every sample reply, carry
// exactly the store's rows of their nodes and their seeds' labels, for
// every dtype; epoch_info describes them; the reply bound covers them; a
// store without planning (or planning without a store) is refused.
func TestServeFeatures(t *testing.T) {
	g := randomCSR(3000, 8, 5)
	for _, c := range []struct {
		dt  featstore.DType
		dim int
	}{{featstore.Float32, 16}, {featstore.Float16, 7}, {featstore.Int8, 33}, {featstore.Uint8, 1}} {
		fs := featureGraph(t, g, c.dim, c.dt)
		cfg := Config{
			Config: epoch.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 3), Fanouts: []int{4, 3}, Seed: 2},
				BatchSize: 37, Epochs: 2, PrepareAt: 0.5, Features: &epoch.FeaturePlanning{CacheRows: 300, Reorder: c.dt == featstore.Float16}},
			Sampler: &refSampler{g: g}, NumNodes: 3000, Features: fs,
		}
		s := newTestServer(t, cfg)
		path := serveUnix(t, s)
		info := s.Info()
		if info.Features == nil || info.Features.Dim != c.dim || info.Features.DType != string(c.dt) || !info.Features.Labels {
			t.Fatalf("%s: epoch_info features %+v", c.dt, info.Features)
		}
		var mu sync.Mutex
		seen := map[[2]int]bool{}
		var wg sync.WaitGroup
		for range 3 {
			cl := dial(t, path)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for e := uint32(0); e < 2; e++ {
					for {
						b, err := cl.NextBatch(e)
						if err != nil {
							t.Error(err)
							return
						}
						if b.End {
							break
						}
						checkFeatures(t, fs, b.Blocks, b.Features)
						mu.Lock()
						seen[[2]int{int(b.Epoch), b.Index}] = true
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if want := 2 * epoch.BatchesPerRank(1000, 1, 37); len(seen) != want {
			t.Fatalf("%s: %d minibatches served, want %d", c.dt, len(seen), want)
		}
		cl := dial(t, path)
		b, f, err := cl.SampleFeatures(epoch.CurrentEpoch, []uint32{6, 3, 2997})
		if err != nil {
			t.Fatal(err)
		}
		checkFeatures(t, fs, b, f)
		if bound, plain := s.replyBound(37), replyBound(37, cfg.Fanouts, cfg.NumNodes); bound < plain+fs.RowBytes()*37 {
			t.Fatalf("reply bound %d does not cover the feature rows (plain %d)", bound, plain)
		}
	}
	fs := featureGraph(t, g, 4, featstore.Float32)
	base := epoch.Config{Sampling: epoch.Sampling{Train: trainNodes(3000, 3), Fanouts: []int{4}}, BatchSize: 10}
	if _, err := New(Config{Config: base, Sampler: &refSampler{g: g}, Features: fs}); err == nil {
		t.Fatal("a feature store without feature planning accepted")
	}
	base.Features = &epoch.FeaturePlanning{}
	if _, err := New(Config{Config: base, Sampler: &refSampler{g: g}}); err == nil {
		t.Fatal("feature planning without a store accepted")
	}
	if _, err := New(Config{Config: base, Sampler: &refSampler{g: g}, Features: fs, NumNodes: 2999}); err == nil {
		t.Fatal("a store of another size accepted")
	}
}
