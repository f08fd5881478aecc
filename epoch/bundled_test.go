package epoch_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
)

// TestPyGSemanticsBundledGraphs: on every graph bundled under testdata/,
// built as PyG samples it (in-edges, duplicates kept) into small chunks
// and sampled by the streaming sampler with edge ids, the PyG-semantics
// blocks of random minibatches equal the independent rendering of the
// algorithm (brutePyG), edge ids included, and every edge id names the
// stored edge it claims: the sampled node in the expanded node's
// adjacency.
func TestPyGSemanticsBundledGraphs(t *testing.T) {
	graphs := []string{
		"email-Eu-core.txt.gz", "facebook_combined.txt.gz", "Wiki-Vote.txt",
		"musae-facebook/facebook_edges.csv.gz", "planetoid/cora.edges.txt.gz",
	}
	for _, name := range graphs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			if _, err := ingest.Build(context.Background(), []string{filepath.Join("..", "testdata", name)}, dir,
				ingest.BuildOptions{Reverse: true, ChunkSize: 256 << 10}); err != nil {
				t.Fatal(err)
			}
			s, err := host.Open(dir, host.Options{EdgeIDs: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			csr, err := host.LoadCSR(dir)
			if err != nil {
				t.Fatal(err)
			}
			n := len(csr.Indptr) - 1
			r := rand.New(rand.NewPCG(uint64(n), 13))
			var train []uint32
			for v := 0; v < n; v += 3 {
				train = append(train, uint32(v))
			}
			for _, fanouts := range [][]int{{10, 5}, {4, 4, 4}} {
				res, err := s.SampleEpoch(context.Background(), train, fanouts, epoch.Key{Seed: 5, Epoch: 2})
				if err != nil {
					t.Fatal(err)
				}
				ix, err := res.Index(uint32(n))
				if err != nil {
					t.Fatal(err)
				}
				a := epoch.NewAssembler(res, ix)
				for trial := 0; trial < 20; trial++ {
					m := 1 + r.IntN(min(256, len(train)))
					seeds := make([]uint32, m)
					for i, p := range r.Perm(len(train))[:m] {
						seeds[i] = train[p]
					}
					b, err := a.Assemble(seeds, epoch.PyG)
					if err != nil {
						t.Fatal(err)
					}
					if err := epochtest.EqualPyG(b, res, seeds); err != nil {
						t.Fatalf("fanouts %v trial %d: %v", fanouts, trial, err)
					}
					known := len(seeds)
					for h, hop := range b.Hops {
						lo := known - len(hop.Dst)
						nid := b.Nodes()
						for e, id := range hop.EdgeIDs {
							dst := nid[lo+int(hop.EdgeDst[e])]
							if id < int64(csr.Indptr[dst]) || id >= int64(csr.Indptr[dst+1]) || csr.Indices[id] != nid[hop.EdgeSrc[e]] {
								t.Fatalf("hop %d edge %d: id %d is not an edge %d → %d of the stored CSR", h+1, e, id, nid[hop.EdgeSrc[e]], dst)
							}
						}
						known = len(hop.Src)
					}
				}
			}
		})
	}
}
