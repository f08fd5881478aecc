package layerwise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
	"github.com/streamsampler/streamsampler/fullscan"
	"github.com/streamsampler/streamsampler/internal/testgraph"
)

// writeGraph writes a random graph of n nodes into chunkSize-byte chunks.
func writeGraph(t testing.TB, n uint32, deg int, chunkSize int64, seed uint64) string {
	t.Helper()
	indptr, indices := testgraph.RandomCSR(n, deg, seed)
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, n, chunkSize, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for v := range n {
		if err := w.Append(indices[indptr[v]:indptr[v+1]]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scanned is the plain pass over dir: what every Pass's blocks must be.
func scanned(t testing.TB, dir string, o fullscan.Options) []*fullscan.Batch {
	t.Helper()
	s, err := fullscan.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []*fullscan.Batch
	for {
		b, err := s.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
}

// TestPassRowsEqualStore: in every mode (resident; planned windows with a
// cache of a few rows, of one minibatch, of everything), every
// minibatch's blocks are the plain scan's and its rows, copied
// concurrently by several goroutines, are the store's own checked reads
// of its n_id (featstore.ReadRows), for row sizes that are not powers of
// two.
func TestPassRowsEqualStore(t *testing.T) {
	for _, f := range []struct {
		dt  featstore.DType
		dim int
	}{{featstore.Float32, 16}, {featstore.Float16, 3}, {featstore.Uint8, 1000}} {
		t.Run(fmt.Sprintf("%s-%d", f.dt, f.dim), func(t *testing.T) {
			dir := writeGraph(t, 3000, 6, 2048, 1)
			st := featstoretest.Open(t, dir, f.dt, f.dim, 0, 7)
			rb := st.RowBytes()
			so := fullscan.Options{BatchSize: 128, EdgeIDs: true}
			want := scanned(t, dir, so)
			for _, mode := range []struct {
				name     string
				resident int64
				cache    int64
			}{
				{"resident", 1 << 30, 0},
				{"planned-tiny-cache", 0, 5 * rb},
				{"planned-one-batch", -1, 300 * rb},
				{"planned-all", 0, 3000 * rb},
			} {
				t.Run(mode.name, func(t *testing.T) {
					p, err := Open(dir, Options{Scan: so, Features: st, ResidentBytes: mode.resident, CacheBytes: mode.cache, Ahead: 3})
					if err != nil {
						t.Fatal(err)
					}
					defer p.Close()
					if p.Resident() != (mode.resident > 0) {
						t.Fatalf("resident %v", p.Resident())
					}
					var wg sync.WaitGroup
					errs := make(chan error, len(want))
					for i := 0; ; i++ {
						b, err := p.Next(context.Background())
						if err == io.EOF {
							if i != len(want) {
								t.Fatalf("%d minibatches, want %d", i, len(want))
							}
							break
						}
						if err != nil {
							t.Fatal(err)
						}
						w := want[i]
						if b.Index != i || !slices.Equal(b.NID, w.NID) || !slices.Equal(b.EdgeSrc, w.EdgeSrc) ||
							!slices.Equal(b.EdgeDst, w.EdgeDst) || !slices.Equal(b.EdgeIDs, w.EdgeIDs) {
							t.Fatalf("minibatch %d: blocks differ from the scan's", i)
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							got := make([]byte, int64(len(b.NID))*rb)
							if err := b.Rows(context.Background(), got); err != nil {
								errs <- err
								return
							}
							ref := make([]byte, len(got))
							if err := st.ReadRows(b.NID, ref); err != nil {
								errs <- err
								return
							}
							if !bytes.Equal(got, ref) {
								errs <- fmt.Errorf("minibatch %d: rows differ from the store's", b.Index)
							}
						}()
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Fatal(err)
					}
					stats := p.Stats()
					if stats.Scan.Batches != len(want) {
						t.Fatalf("stats: %d minibatches", stats.Scan.Batches)
					}
					if mode.resident > 0 && stats.SweepBytes != int64(st.NumNodes())*rb {
						t.Fatalf("the sweep read %d bytes, want the file's %d", stats.SweepBytes, int64(st.NumNodes())*rb)
					}
					if mode.resident <= 0 && (stats.Planned == nil || stats.Planned.Batches != len(want)) {
						t.Fatalf("planned report %+v: want %d minibatches", stats.Planned, len(want))
					}
				})
			}
		})
	}
}

// TestPassCorruptRow: a row changed on disk fails the minibatches that
// need it (planned: the pass, at its window) or, resident, that need a
// row at or past it (the sweep stops there), with an error wrapping
// featstore.ErrCorrupt; the others before are delivered whole.
func TestPassCorruptRow(t *testing.T) {
	for _, resident := range []int64{1 << 30, 0} {
		t.Run(fmt.Sprint("resident=", resident > 0), func(t *testing.T) {
			dir := writeGraph(t, 2000, 4, 4096, 2)
			st := featstoretest.Open(t, dir, featstore.Float32, 8, 0, 3)
			const bad = 1500
			f, err := os.OpenFile(st.FeaturesPath(), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{0xff, 0xfe}, bad*st.RowBytes()+3); err != nil {
				t.Fatal(err)
			}
			f.Close()
			p, err := Open(dir, Options{Scan: fullscan.Options{BatchSize: 100}, Features: st, ResidentBytes: resident, CacheBytes: 64 * st.RowBytes()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var failed error
			for failed == nil {
				b, err := p.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					failed = err
					break
				}
				dst := make([]byte, int64(len(b.NID))*st.RowBytes())
				err = b.Rows(context.Background(), dst)
				// Resident, the sweep stops at the bad row: a minibatch
				// reaching past it fails. Planned, one holding it never
				// comes out of its window.
				wantFail := slices.Contains(b.NID, bad)
				if resident > 0 {
					wantFail = slices.Max(b.NID) >= bad
				}
				if wantFail != (err != nil) {
					t.Fatalf("minibatch %d (row %d in it: %v): Rows: %v", b.Index, bad, slices.Contains(b.NID, bad), err)
				}
				failed = err
			}
			if !errors.Is(failed, featstore.ErrCorrupt) {
				t.Fatalf("got %v, want featstore.ErrCorrupt", failed)
			}
		})
	}
}

// TestPassLayerStore: a store packed into another directory that holds
// the same graph (its files linked: how layer outputs are stored, one
// directory per layer) is read by a pass over the graph; a store of
// another graph is refused with featstore.ErrGraphMismatch.
func TestPassLayerStore(t *testing.T) {
	dir := writeGraph(t, 1000, 5, 4096, 4)
	layer := filepath.Join(t.TempDir(), "layer-1")
	if err := os.Mkdir(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{chunkfmt.ManifestFile, chunkfmt.IndexFile, chunkfmt.ChunksFile} {
		if err := os.Symlink(filepath.Join(dir, f), filepath.Join(layer, f)); err != nil {
			t.Fatal(err)
		}
	}
	st := featstoretest.Open(t, layer, featstore.Float32, 4, 0, 5)
	for _, resident := range []int64{1 << 30, 0} {
		p, err := Open(dir, Options{Scan: fullscan.Options{BatchSize: 64}, Features: st, ResidentBytes: resident})
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, int64(len(b.NID))*st.RowBytes())
		ref := make([]byte, len(got))
		if err := b.Rows(context.Background(), got); err != nil {
			t.Fatal(err)
		}
		if err := st.ReadRows(b.NID, ref); err != nil || !bytes.Equal(got, ref) {
			t.Fatalf("rows differ from the layer store's (%v)", err)
		}
		p.Close()
	}
	other := writeGraph(t, 1000, 5, 4096, 99)
	ost := featstoretest.Open(t, other, featstore.Float32, 4, 0, 5)
	if _, err := Open(dir, Options{Scan: fullscan.Options{BatchSize: 64}, Features: ost}); !errors.Is(err, featstore.ErrGraphMismatch) {
		t.Fatalf("a store of another graph: %v, want ErrGraphMismatch", err)
	}
}

// TestPassCloseEarly: a pass closed part-way (its producer blocked on a
// full queue, the sweep running) stops, and Next then fails.
func TestPassCloseEarly(t *testing.T) {
	dir := writeGraph(t, 5000, 6, 2048, 6)
	st := featstoretest.Open(t, dir, featstore.Float32, 64, 0, 1)
	for _, resident := range []int64{1 << 30, 0} {
		p, err := Open(dir, Options{Scan: fullscan.Options{BatchSize: 10}, Features: st, ResidentBytes: resident, Ahead: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Next(context.Background()); !errors.Is(err, fullscan.ErrClosed) {
			t.Fatalf("Next after Close: %v", err)
		}
	}
}

// TestDrain: Drain hands every minibatch to fn once, with the store's
// rows, from several workers, and counts every node, edge and row.
func TestDrain(t *testing.T) {
	dir := writeGraph(t, 2500, 5, 4096, 8)
	st := featstoretest.Open(t, dir, featstore.Float32, 5, 0, 2)
	want := scanned(t, dir, fullscan.Options{BatchSize: 97})
	var edges, rows int64
	for _, b := range want {
		edges += int64(len(b.EdgeSrc))
		rows += int64(len(b.NID))
	}
	for _, resident := range []int64{1 << 30, 0} {
		p, err := Open(dir, Options{Scan: fullscan.Options{BatchSize: 97}, Features: st, ResidentBytes: resident, CacheBytes: 500 * st.RowBytes()})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[int]bool{}
		rep, err := Drain(context.Background(), p, 3, true, func(b *Batch, x []byte) error {
			ref := make([]byte, len(x))
			if err := st.ReadRows(b.NID, ref); err != nil {
				return err
			}
			if !bytes.Equal(x, ref) || !slices.Equal(b.NID, want[b.Index].NID) {
				return fmt.Errorf("minibatch %d differs", b.Index)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[b.Index] {
				return fmt.Errorf("minibatch %d twice", b.Index)
			}
			seen[b.Index] = true
			return nil
		})
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Batches != len(want) || len(seen) != len(want) || rep.Nodes != 2500 || rep.Edges != edges || rep.Rows != rows {
			t.Fatalf("report %+v: want %d minibatches, %d edges, %d rows", rep, len(want), edges, rows)
		}
		// Without the copies: every minibatch, no row copied, and (resident)
		// the whole file read once it returns.
		p, err = Open(dir, Options{Scan: fullscan.Options{BatchSize: 97}, Features: st, ResidentBytes: resident, CacheBytes: 500 * st.RowBytes()})
		if err != nil {
			t.Fatal(err)
		}
		rep, err = Drain(context.Background(), p, 2, false, nil)
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Batches != len(want) || rep.Rows != 0 || resident > 0 && rep.Stats.SweepBytes != int64(st.NumNodes())*st.RowBytes() {
			t.Fatalf("report without copies %+v", rep)
		}
	}
}
