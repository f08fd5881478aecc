package edgeids_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/edgeids"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/ingest"
)

// On bundled graphs cut into many chunks (duplicates kept, so rows repeat
// neighbors), Resolve gives every pair the first position of its source
// in its destination's row, NoEdge for pairs that are not stored, and the
// graph's indptr; Pairs inverts it for stored ids. Checked by linear scans
// of the whole CSR.
func TestResolveMatchesCSR(t *testing.T) {
	for _, name := range []string{"email-Eu-core.txt.gz", "Wiki-Vote.txt", "planetoid/cora.edges.txt.gz"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			if _, err := ingest.Build(context.Background(), []string{filepath.Join("..", "testdata", name)}, dir,
				ingest.BuildOptions{Reverse: true, ChunkSize: 64 << 10}); err != nil {
				t.Fatal(err)
			}
			g, err := chunkfmt.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			csr, err := host.LoadCSR(dir)
			if err != nil {
				t.Fatal(err)
			}
			n := uint32(len(csr.Indptr) - 1)
			r := rand.New(rand.NewPCG(uint64(n), 1))
			var src, dst []uint32
			var ids []int64
			for range 3000 {
				if r.IntN(3) == 0 {
					src, dst = append(src, r.Uint32N(n)), append(dst, r.Uint32N(n))
					continue
				}
				e := r.IntN(len(csr.Indices))
				ids = append(ids, int64(e))
				v := uint32(0)
				for csr.Indptr[v+1] <= uint64(e) {
					v++
				}
				src, dst = append(src, csr.Indices[e]), append(dst, v)
			}
			got, indptr, err := edgeids.Resolve(context.Background(), g, src, dst)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(indptr, csr.Indptr) {
				t.Fatal("indptr differs from the CSR's")
			}
			stored := 0
			for i := range src {
				want := int64(epoch.NoEdge)
				row := csr.Indices[csr.Indptr[dst[i]]:csr.Indptr[dst[i]+1]]
				if p := slices.Index(row, src[i]); p >= 0 {
					want = int64(csr.Indptr[dst[i]]) + int64(p)
					stored++
				}
				if got[i] != want {
					t.Fatalf("pair %d (%d, %d): id %d, want %d", i, src[i], dst[i], got[i], want)
				}
			}
			if stored < 2000 {
				t.Fatalf("only %d of the pairs stored", stored)
			}
			ps, pd, _, err := edgeids.Pairs(context.Background(), g, ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range ids {
				if ps[i] != csr.Indices[e] || !(csr.Indptr[pd[i]] <= uint64(e) && uint64(e) < csr.Indptr[pd[i]+1]) {
					t.Fatalf("edge %d: pair (%d, %d)", e, ps[i], pd[i])
				}
			}
			if _, _, err := edgeids.Resolve(context.Background(), g, []uint32{0}, []uint32{n}); err == nil {
				t.Fatal("a node past the graph: no error")
			}
			if _, _, _, err := edgeids.Pairs(context.Background(), g, []int64{int64(len(csr.Indices))}); err == nil {
				t.Fatal("an id past the edges: no error")
			}
		})
	}
}
