package fullscan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/ingest"
	"github.com/streamsampler/streamsampler/internal/testgraph"
)

// brute is the definition of a pass, written from PyG's loader semantics
// for one full hop directly on the CSR: for [a, b), n_id = a..b−1, then
// each seed's neighbors in CSR order, a node not yet in n_id appended;
// an edge per stored neighbor, (its local id → the seed's), with its CSR
// position.
func brute(indptr []uint64, indices []uint32, bs int) []Batch {
	n := uint32(len(indptr) - 1)
	var out []Batch
	for a := uint32(0); a < n; a += uint32(bs) {
		b := min(a+uint32(bs), n)
		bt := Batch{Index: len(out), Start: a, End: b}
		pos := map[uint32]int32{}
		for v := a; v < b; v++ {
			pos[v] = int32(len(bt.NID))
			bt.NID = append(bt.NID, v)
		}
		for v := a; v < b; v++ {
			for p := indptr[v]; p < indptr[v+1]; p++ {
				u := indices[p]
				l, ok := pos[u]
				if !ok {
					l = int32(len(bt.NID))
					pos[u] = l
					bt.NID = append(bt.NID, u)
				}
				bt.EdgeSrc = append(bt.EdgeSrc, l)
				bt.EdgeDst = append(bt.EdgeDst, int32(v-a))
				bt.EdgeIDs = append(bt.EdgeIDs, int64(p))
			}
		}
		out = append(out, bt)
	}
	return out
}

// writeGraph writes a CSR into a graph directory of chunkSize-byte chunks.
func writeGraph(t testing.TB, indptr []uint64, indices []uint32, chunkSize int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "g")
	n := uint32(len(indptr) - 1)
	w, err := chunkfmt.NewWriter(dir, n, chunkSize, chunkfmt.Options{SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < n; v++ {
		if err := w.Append(indices[indptr[v]:indptr[v+1]]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scanAll runs a whole pass.
func scanAll(t testing.TB, dir string, o Options) ([]Batch, Stats) {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []Batch
	for {
		b, err := s.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *b)
	}
	if len(out) != s.NumBatches() {
		t.Fatalf("%d minibatches, NumBatches says %d", len(out), s.NumBatches())
	}
	return out, s.Stats()
}

// equal compares a pass with brute's, field by field (EdgeIDs only where
// asked for), naming the first difference.
func equal(got, want []Batch, ids bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d minibatches, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		switch {
		case g.Index != w.Index || g.Start != w.Start || g.End != w.End:
			return fmt.Errorf("minibatch %d: index %d nodes [%d,%d), want %d [%d,%d)", i, g.Index, g.Start, g.End, w.Index, w.Start, w.End)
		case !slices.Equal(g.NID, w.NID):
			return fmt.Errorf("minibatch %d: n_id %v, want %v", i, head(g.NID), head(w.NID))
		case !slices.Equal(g.EdgeSrc, w.EdgeSrc) || !slices.Equal(g.EdgeDst, w.EdgeDst):
			return fmt.Errorf("minibatch %d: edges differ", i)
		case ids && !slices.Equal(g.EdgeIDs, w.EdgeIDs):
			return fmt.Errorf("minibatch %d: edge ids differ", i)
		case !ids && g.EdgeIDs != nil:
			return fmt.Errorf("minibatch %d: edge ids without Options.EdgeIDs", i)
		}
	}
	return nil
}

func head[T any](a []T) []T { return a[:min(len(a), 12)] }

// checkInvariants checks what holds whatever the order: every edge is the
// stored edge its id names (indices[id] is its source, id within its
// destination's row), and the pass's edge ids are 0..E−1, each once, in
// order.
func checkInvariants(t *testing.T, got []Batch, indptr []uint64, indices []uint32) {
	t.Helper()
	var next int64
	for _, b := range got {
		for k := range b.EdgeSrc {
			id := b.EdgeIDs[k]
			v := b.Start + uint32(b.EdgeDst[k])
			if id != next {
				t.Fatalf("minibatch %d edge %d: id %d, want %d (every stored edge once, in order)", b.Index, k, id, next)
			}
			next++
			if uint64(id) < indptr[v] || uint64(id) >= indptr[v+1] || indices[id] != b.NID[b.EdgeSrc[k]] {
				t.Fatalf("minibatch %d edge %d: %d -> %d with id %d is not a stored edge", b.Index, k, b.NID[b.EdgeSrc[k]], v, id)
			}
		}
	}
	if next != int64(len(indices)) {
		t.Fatalf("%d edges in the pass, the graph has %d", next, len(indices))
	}
}

// TestScanEqualsBrute: on random graphs (hubs, isolated nodes) packed
// into chunks from 512 bytes (minibatches spanning many chunks) to one
// chunk, every batch size, buffer count, relabel table and number of
// relabelling workers gives brute's minibatches exactly, in order.
func TestScanEqualsBrute(t *testing.T) {
	for _, tc := range []struct {
		n      uint32
		deg    int
		chunk  int64
		bs     []int
		seed   uint64
		repeat bool
	}{
		{n: 1, deg: 0, chunk: 512, bs: []int{1, 4}},
		{n: 300, deg: 4, chunk: 512, bs: []int{1, 3, 64, 300, 1000}, seed: 1},
		{n: 2000, deg: 8, chunk: 4096, bs: []int{7, 128, 4096}, seed: 2},
		{n: 5000, deg: 6, chunk: 1 << 20, bs: []int{1000, 4999}, seed: 3},
		{n: 1500, deg: 5, chunk: 1024, bs: []int{33}, seed: 4, repeat: true},
	} {
		var indptr []uint64
		var indices []uint32
		if tc.repeat {
			indptr, indices = testgraph.RandomRepeatsCSR(tc.n, tc.deg, tc.seed)
		} else {
			indptr, indices = testgraph.RandomCSR(tc.n, tc.deg, tc.seed)
		}
		dir := writeGraph(t, indptr, indices, tc.chunk)
		for _, bs := range tc.bs {
			want := brute(indptr, indices, bs)
			for _, o := range []Options{
				{BatchSize: bs, EdgeIDs: true},
				{BatchSize: bs, EdgeIDs: true, Buffers: 1, Workers: 1},
				{BatchSize: bs, EdgeIDs: true, Buffers: 3, TableBytes: 1 << 30, Workers: 3},
				{BatchSize: bs, Workers: 2},
			} {
				t.Run(fmt.Sprintf("n%d-chunk%d-bs%d-buf%d-table%d-w%d-ids%v", tc.n, tc.chunk, bs, o.Buffers, o.TableBytes, o.Workers, o.EdgeIDs), func(t *testing.T) {
					got, st := scanAll(t, dir, o)
					if err := equal(got, want, o.EdgeIDs); err != nil {
						t.Fatal(err)
					}
					if o.EdgeIDs {
						checkInvariants(t, got, indptr, indices)
					}
					m, _ := chunkfmt.ReadManifest(dir)
					if st.Chunks != len(m.Chunks) || st.Edges != int64(len(indices)) || st.Batches != len(want) {
						t.Fatalf("stats %+v: want %d chunks, %d edges, %d minibatches", st, len(m.Chunks), len(indices), len(want))
					}
				})
			}
		}
	}
}

// TestScanHub: a node whose adjacency fills most of its chunk (a hub, in
// a graph of small chunks) is returned whole, in any minibatch, through
// buffers of the chunk size; the pass's memory does not grow with it
// beyond its own edges.
func TestScanHub(t *testing.T) {
	const n = 4000
	const chunk = 64 << 10
	hubDeg := int(chunk/4) - 4 - 16 // as large as a chunk holding it and a few others allows
	adj := make([][]uint32, n)
	for v := range adj {
		if v == 1234 {
			for u := 0; u < hubDeg; u++ {
				adj[v] = append(adj[v], uint32(u%n))
			}
			slices.Sort(adj[v])
			continue
		}
		adj[v] = []uint32{uint32((v * 7) % n), uint32((v*13 + 1) % n)}
		slices.Sort(adj[v])
	}
	indptr, indices := testgraph.FromAdjacency(adj)
	dir := writeGraph(t, indptr, indices, chunk)
	for _, bs := range []int{1, 100, 1234, 1235, n} {
		got, _ := scanAll(t, dir, Options{BatchSize: bs, EdgeIDs: true})
		if err := equal(got, brute(indptr, indices, bs), true); err != nil {
			t.Fatalf("batch size %d: %v", bs, err)
		}
		checkInvariants(t, got, indptr, indices)
	}
}

// TestScanBundledGraphs: every graph bundled under testdata/, built as
// PyG samples it (in-edges, duplicates kept) into small chunks, scanned
// with PyG's evaluation batch size and a few others, equals brute on its
// CSR.
func TestScanBundledGraphs(t *testing.T) {
	graphs := []string{
		"email-Eu-core.txt.gz", "facebook_combined.txt.gz", "Wiki-Vote.txt",
		"musae-facebook/facebook_edges.csv.gz", "planetoid/cora.edges.txt.gz",
	}
	for _, name := range graphs {
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
			indptr, indices, err := g.CSR()
			g.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, bs := range []int{4096, 1000, 17} {
				got, _ := scanAll(t, dir, Options{BatchSize: bs, EdgeIDs: true})
				if err := equal(got, brute(indptr, indices, bs), true); err != nil {
					t.Fatalf("batch size %d: %v", bs, err)
				}
				checkInvariants(t, got, indptr, indices)
			}
		})
	}
}

// TestScanEmptyGraph: a graph without nodes has no minibatch.
func TestScanEmptyGraph(t *testing.T) {
	dir := writeGraph(t, []uint64{0}, nil, 512)
	got, _ := scanAll(t, dir, Options{BatchSize: 8})
	if len(got) != 0 {
		t.Fatalf("%d minibatches of an empty graph", len(got))
	}
}

// TestScanCorrupt: a flipped byte anywhere a pass reads (header, offsets,
// neighbors, the last chunk) is an error wrapping chunkfmt.ErrCorrupt (the
// chunk's CRC-32C, checked before any word is used), and the pass stays
// failed; nothing panics.
func TestScanCorrupt(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(500, 6, 9)
	for _, at := range []int64{0, 4, 9, 700, 1500, 3000} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			dir := writeGraph(t, indptr, indices, 1024)
			path := filepath.Join(dir, chunkfmt.ChunksFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[at] ^= 0x40
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{BatchSize: 50, EdgeIDs: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var failed error
			for failed == nil {
				_, failed = s.Next(context.Background())
			}
			if failed == io.EOF || !errors.Is(failed, chunkfmt.ErrCorrupt) {
				t.Fatalf("got %v, want an error wrapping chunkfmt.ErrCorrupt", failed)
			}
			if _, again := s.Next(context.Background()); again != failed {
				t.Fatalf("Next after the failure: %v, want the same error", again)
			}
		})
	}
}

// TestScanTruncated: edges.chunks shorter than the manifest says is
// refused at Open.
func TestScanTruncated(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(300, 4, 5)
	dir := writeGraph(t, indptr, indices, 512)
	path := filepath.Join(dir, chunkfmt.ChunksFile)
	if err := os.Truncate(path, 512); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{BatchSize: 4}); !errors.Is(err, chunkfmt.ErrCorrupt) {
		t.Fatalf("got %v, want chunkfmt.ErrCorrupt", err)
	}
}

// TestScanCancelAndClose: a cancelled context stops Next with its error;
// Close stops the reader (whatever it was doing) and later calls fail
// with ErrClosed.
func TestScanCancelAndClose(t *testing.T) {
	indptr, indices := testgraph.RandomCSR(3000, 6, 6)
	dir := writeGraph(t, indptr, indices, 512)
	s, err := Open(dir, Options{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var e error
	for e == nil {
		_, e = s.Next(ctx) // the chunk in hand may still serve a minibatch or two
	}
	if !errors.Is(e, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", e)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if _, err := s2.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
}

// TestOptionsChecked: bad options are refused before anything is read.
func TestOptionsChecked(t *testing.T) {
	dir := writeGraph(t, []uint64{0, 0}, nil, 512)
	for _, o := range []Options{{BatchSize: 0}, {BatchSize: -3}, {BatchSize: 1, Buffers: -1}, {BatchSize: 1, Workers: -2}} {
		if _, err := Open(dir, o); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: got %v, want ErrOptions", o, err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none"), Options{BatchSize: 1}); err == nil {
		t.Error("a directory without a graph was opened")
	}
}

// TestRelabelStampWraps: when the minibatch stamp wraps around (after
// 2^32 − 1 minibatches), the table is cleared: an entry of the last
// stamp before the wrap is not taken for one of the first after it.
func TestRelabelStampWraps(t *testing.T) {
	var r relabel
	r.init(10, 1<<20)
	r.reset()
	if l, fresh := r.local(3, 5); !fresh || l != 5 {
		t.Fatalf("first sight: %d %v", l, fresh)
	}
	if l, fresh := r.local(3, 9); fresh || l != 5 {
		t.Fatalf("second sight: %d %v", l, fresh)
	}
	r.cur = 0xFFFFFFFF << 32 // the last stamp
	r.tab[4] = r.cur | 7
	r.reset() // wraps
	for _, u := range []uint32{3, 4} {
		if l, fresh := r.local(u, 1); !fresh || l != 1 {
			t.Fatalf("node %d after the wrap: %d %v, want a fresh local id", u, l, fresh)
		}
	}
}

// TestRelabelHashGrows: the hash table keeps every node's local id as it
// grows far past its first size, and forgets them all at the next
// minibatch.
func TestRelabelHashGrows(t *testing.T) {
	var r relabel
	r.init(1<<30, 0)
	if r.tab != nil {
		t.Fatal("a dense table without TableBytes")
	}
	for round := 0; round < 2; round++ {
		r.reset()
		const n = 300_000
		for i := uint32(0); i < n; i++ {
			u := i*2654435761 + uint32(round) // distinct: odd multiplier mod 2^32
			if l, fresh := r.local(u, int32(i)); !fresh || l != int32(i) {
				t.Fatalf("round %d: node %d first seen: %d %v", round, u, l, fresh)
			}
		}
		for i := uint32(0); i < n; i += 7 {
			u := i*2654435761 + uint32(round)
			if l, fresh := r.local(u, -1); fresh || l != int32(i) {
				t.Fatalf("round %d: node %d again: %d %v, want %d", round, u, l, fresh, i)
			}
		}
		if len(r.hash) < 2*n {
			t.Fatalf("table of %d entries for %d nodes: more than half full", len(r.hash), n)
		}
	}
}
