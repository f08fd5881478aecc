package featrows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/featstore/featstoretest"
)

// store writes a graph of n nodes (a path) with a feature store of random
// rows of dim float32 (and, with labels, random labels, some missing) and
// opens the store.
func store(t testing.TB, n uint32, dim int, labels bool) *featstore.Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "g")
	w, err := chunkfmt.NewWriter(dir, n, 1<<20, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for u := range n {
		var adj []uint32
		if u+1 < n {
			adj = append(adj, u+1)
		}
		if err := w.Append(adj); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	classes := 0
	if labels {
		classes = 6
	}
	return featstoretest.Open(t, dir, featstore.Float32, dim, classes, uint64(n))
}

// newExec returns an Executor over fs, closed with the test.
func newExec(t *testing.T, fs *featstore.Store) *Executor {
	t.Helper()
	x, err := New(fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// batches returns nb minibatches of up to maxLen distinct nodes of n,
// overlapping (drawn from the first third more often), so a cache hits.
func batches(r *rand.Rand, nb, maxLen int, n uint32) [][]uint32 {
	out := make([][]uint32, nb)
	for b := range out {
		seen := map[uint32]bool{}
		for k := 1 + r.IntN(maxLen); len(out[b]) < k; {
			v := r.Uint32N(n)
			if r.IntN(2) == 0 {
				v %= n / 3
			}
			if !seen[v] {
				seen[v] = true
				out[b] = append(out[b], v)
			}
		}
	}
	return out
}

// want is the store's rows of nodes, read by featstore itself.
func want(t *testing.T, fs *featstore.Store, nodes []uint32) []byte {
	t.Helper()
	b := make([]byte, int64(len(nodes))*fs.RowBytes())
	if err := fs.ReadRows(nodes, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// plan makes a plan of a cache of cacheRows rows over bs, preloaded where
// the rows fit; with forget, it forgets its node sets (as the command
// line's plans do) and the rows are read with the n_id given.
func plan(t *testing.T, fs *featstore.Store, bs [][]uint32, cacheRows int, forget bool) *featplan.Plan {
	t.Helper()
	p, err := featplan.NewPreloadedPlan(bs, fs.NumNodes(), cacheRows)
	if err != nil {
		t.Fatal(err)
	}
	if forget {
		p.ForgetNodes(fs.RowBytes())
	}
	return p
}

// TestPlannedRows: minibatches read under a plan by several goroutines
// that arrive in any order each get exactly the store's rows of their
// n_id, every minibatch once, for caches of none, some and every row, with
// the plan's node sets kept or forgotten; the report counts every row.
func TestPlannedRows(t *testing.T) {
	const n = 2000
	fs := store(t, n, 5, true)
	for _, tc := range []struct {
		cache   int
		forget  bool
		readers int
	}{
		{0, false, 1}, {0, true, 3}, {150, false, 4}, {150, true, 1}, {n, false, 3}, {n, true, 4},
	} {
		t.Run(fmt.Sprintf("cache%d/forget%v/readers%d", tc.cache, tc.forget, tc.readers), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.cache), uint64(tc.readers)))
			bs := batches(r, 40, 120, n)
			x := newExec(t, fs)
			defer x.Close()
			ep, err := x.Epoch(3, plan(t, fs, bs, tc.cache, tc.forget))
			if err != nil {
				t.Fatal(err)
			}
			// Minibatch i goes to reader i mod readers, each reader taking
			// its own in a shuffled order it waits through.
			var wg sync.WaitGroup
			errs := make(chan error, len(bs))
			for g := range tc.readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []int
					for i := g; i < len(bs); i += tc.readers {
						mine = append(mine, i)
					}
					for _, i := range mine {
						dst := make([]byte, int64(len(bs[i]))*fs.RowBytes())
						if err := ep.Read(context.Background(), i, bs[i], dst); err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(dst, want(t, fs, bs[i])) {
							errs <- fmt.Errorf("minibatch %d: rows differ from the store's", i)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			rep := ep.Report()
			var rows int64
			for _, b := range bs {
				rows += int64(len(b))
			}
			if ep.Turn() != len(bs) || rep.Batches != len(bs) || rep.RowsNeeded != rows || rep.RowsFromCache+rep.RowsFromDisk != rows || rep.OptimumBytes == 0 {
				t.Fatalf("turn %d, report %+v, want %d minibatches of %d rows", ep.Turn(), rep, len(bs), rows)
			}
			if (tc.cache == 0) != (rep.RowsFromCache == 0) {
				t.Fatalf("cache of %d rows, %d hits", tc.cache, rep.RowsFromCache)
			}
		})
	}
}

// TestTurnsPassedWithoutDelivery: a minibatch read and dropped (dst nil),
// or skipped (its assembly failed), still fills the cache as planned: the
// minibatches after it get the store's rows. A skip under a plan that
// forgot its node sets cannot, and fails the epoch's later minibatches
// (ErrEpochFailed).
func TestTurnsPassedWithoutDelivery(t *testing.T) {
	const n = 1500
	fs := store(t, n, 3, false)
	for _, tc := range []struct {
		name     string
		forget   bool
		skip     bool // Skip minibatch 2; otherwise Read it with dst nil
		failsTo3 bool
	}{
		{"drop", false, false, false},
		{"drop/forgotten", true, false, false},
		{"skip", false, true, false},
		{"skip/forgotten", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs := batches(rand.New(rand.NewPCG(5, 6)), 8, 200, n)
			x := newExec(t, fs)
			defer x.Close()
			ep, err := x.Epoch(0, plan(t, fs, bs, 100, tc.forget))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, b := range bs {
				var err error
				switch {
				case i == 2 && tc.skip:
					err = ep.Skip(ctx, i)
				case i == 2:
					err = ep.Read(ctx, i, b, nil)
				default:
					dst := make([]byte, int64(len(b))*fs.RowBytes())
					if err = ep.Read(ctx, i, b, dst); err == nil && !bytes.Equal(dst, want(t, fs, b)) {
						t.Fatalf("minibatch %d: rows differ from the store's", i)
					}
				}
				switch {
				case !tc.failsTo3 || i < 2:
					if err != nil {
						t.Fatalf("minibatch %d: %v", i, err)
					}
				case i == 2:
					if err == nil || errors.Is(err, ErrEpochFailed) {
						t.Fatalf("the skip of a forgotten minibatch: %v, want its own error", err)
					}
				default:
					if !errors.Is(err, ErrEpochFailed) {
						t.Fatalf("minibatch %d after a failed skip: %v, want ErrEpochFailed", i, err)
					}
				}
			}
			// A failed epoch's turn stops after the failure.
			if turn := ep.Turn(); turn != len(bs) && !(tc.failsTo3 && turn == 3) {
				t.Fatalf("turn %d after %d minibatches", turn, len(bs))
			}
		})
	}
}

// TestTurnErrors: a minibatch outside the plan, or one whose turn has
// passed, is refused (ErrTurn) without disturbing the epoch; an n_id
// other than the planned one fails the minibatch and the epoch's later
// ones; a minibatch whose ctx ends while it waits fails the epoch (its
// turn would never come) and returns ctx's error.
func TestTurnErrors(t *testing.T) {
	const n = 800
	fs := store(t, n, 2, true)
	bs := batches(rand.New(rand.NewPCG(1, 2)), 5, 50, n)
	ctx := context.Background()
	read := func(ep *Epoch, i int, nodes []uint32) error {
		return ep.Read(ctx, i, nodes, make([]byte, int64(len(nodes))*fs.RowBytes()))
	}
	x := newExec(t, fs)
	defer x.Close()

	ep, err := x.Epoch(0, plan(t, fs, bs, 20, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{-1, len(bs)} {
		if err := read(ep, i, bs[0]); !errors.Is(err, ErrTurn) {
			t.Fatalf("minibatch %d: %v, want ErrTurn", i, err)
		}
	}
	if err := read(ep, 0, bs[0]); err != nil {
		t.Fatal(err)
	}
	if err := read(ep, 0, bs[0]); !errors.Is(err, ErrTurn) {
		t.Fatalf("minibatch 0 again: %v, want ErrTurn", err)
	}
	if err := read(ep, 1, bs[2]); err == nil || errors.Is(err, ErrEpochFailed) || errors.Is(err, ErrTurn) {
		t.Fatalf("another minibatch's n_id: %v", err)
	}
	if err := read(ep, 2, bs[2]); !errors.Is(err, ErrEpochFailed) {
		t.Fatalf("after a failed minibatch: %v, want ErrEpochFailed", err)
	}

	ep, err = x.Epoch(1, plan(t, fs, bs, 20, true))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- ep.Read(cctx, 3, bs[3], nil) }()
	time.Sleep(20 * time.Millisecond) // it waits for minibatches 0-2
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait whose ctx ended: %v, want context.Canceled", err)
	}
	if err := read(ep, 0, bs[0]); !errors.Is(err, ErrEpochFailed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("after a minibatch gave up its turn: %v, want ErrEpochFailed and its cause", err)
	}
}

// TestEpochLifecycle: the reads of an epoch are one per epoch (asked
// again, the same); opening epoch e closes those before e-1, whose
// waiting minibatches and later requests fail with ErrClosed, and which
// are not opened again; an epoch without a plan is an error; after Close,
// no epoch opens.
func TestEpochLifecycle(t *testing.T) {
	const n = 600
	fs := store(t, n, 4, false)
	bs := batches(rand.New(rand.NewPCG(3, 4)), 4, 40, n)
	p := plan(t, fs, bs, 0, false)
	x := newExec(t, fs)
	if _, err := x.Epoch(0, nil); err == nil {
		t.Fatal("an epoch without a plan opened")
	}
	e0, err := x.Epoch(0, p)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := x.Epoch(0, nil); err != nil || again != e0 {
		t.Fatalf("epoch 0 asked again: %p %v, want %p", again, err, e0)
	}
	waited := make(chan error, 1)
	go func() { waited <- e0.Read(context.Background(), 1, bs[1], nil) }()
	if _, err := x.Epoch(1, p); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		t.Fatalf("epoch 0's minibatch 1 returned (%v) while epoch 1 began", err)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := x.Epoch(2, p); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, ErrClosed) {
		t.Fatalf("a minibatch waiting in epoch 0 when epoch 2 began: %v, want ErrClosed", err)
	}
	if err := e0.Read(context.Background(), 0, bs[0], nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("epoch 0 read after epoch 2 began: %v, want ErrClosed", err)
	}
	if _, err := x.Epoch(0, p); !errors.Is(err, ErrClosed) {
		t.Fatalf("epoch 0 opened again: %v, want ErrClosed", err)
	}
	e1, err := x.Epoch(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.Read(context.Background(), 0, bs[0], nil); err != nil {
		t.Fatalf("epoch 1 beside epoch 2: %v", err)
	}
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e1.Close(); err != nil {
		t.Fatalf("closed twice: %v", err)
	}
	if err := e1.Skip(context.Background(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed epoch's skip: %v, want ErrClosed", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Epoch(3, p); !errors.Is(err, ErrClosed) {
		t.Fatalf("an epoch opened after Close: %v", err)
	}
}

// TestDirectAndLabels: rows read outside any plan are the store's, in
// the order asked; labels are the store's (the slice given reused), nil
// for a store without labels.
func TestDirectAndLabels(t *testing.T) {
	const n = 1000
	for _, labels := range []bool{true, false} {
		t.Run(fmt.Sprintf("labels%v", labels), func(t *testing.T) {
			fs := store(t, n, 7, labels)
			x := newExec(t, fs)
			defer x.Close()
			nodes := []uint32{999, 3, 500, 4, 0, 501}
			dst := make([]byte, int64(len(nodes))*fs.RowBytes())
			rep, err := x.ReadDirect(nodes, dst)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, want(t, fs, nodes)) || rep.RowsFromDisk != int64(len(nodes)) || rep.Reads == 0 {
				t.Fatalf("direct rows differ from the store's (report %+v)", rep)
			}
			if _, err := x.ReadDirect([]uint32{n}, make([]byte, fs.RowBytes())); err == nil {
				t.Fatal("a node past the store read")
			}
			buf := make([]int32, 0, 16)
			y, err := x.Labels(nodes, buf)
			if err != nil {
				t.Fatal(err)
			}
			if !labels {
				if y != nil {
					t.Fatalf("labels %v from a store without", y)
				}
				return
			}
			wy := make([]int32, len(nodes))
			if err := fs.ReadLabels(nodes, wy); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(y, wy) || &y[0] != &buf[:1][0] {
				t.Fatalf("labels %v, want %v in the slice given", y, wy)
			}
			if y, err := x.Labels(nil, nil); err != nil || y == nil || len(y) != 0 {
				t.Fatalf("no seeds: %v %v, want an empty slice", y, err)
			}
		})
	}
}

// TestReadInto: the destination is asked for only in the minibatch's turn
// (never before an earlier minibatch is delivered), the rows are the
// store's, and a destination that cannot be had passes the turn on with
// the cache filled as planned: later minibatches still get the store's
// rows, and the epoch is not failed.
func TestReadInto(t *testing.T) {
	const n = 1200
	fs := store(t, n, 4, false)
	r := rand.New(rand.NewPCG(7, 8))
	bs := batches(r, 30, 90, n)
	x := newExec(t, fs)
	ep, err := x.Epoch(1, plan(t, fs, bs, 100, false))
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("no buffer")
	var wg sync.WaitGroup
	errs := make(chan error, len(bs))
	for i := len(bs) - 1; i >= 0; i-- { // the later ones ask first
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := ep.ReadInto(context.Background(), i, bs[i], func() ([]byte, error) {
				if turn := ep.Turn(); turn != i {
					return nil, fmt.Errorf("minibatch %d asked for its buffer at turn %d", i, turn)
				}
				if i%7 == 3 {
					return nil, refused
				}
				return make([]byte, int64(len(bs[i]))*fs.RowBytes()), nil
			})
			switch {
			case i%7 == 3 && !errors.Is(err, refused):
				errs <- fmt.Errorf("minibatch %d: refused buffer gave %v", i, err)
			case i%7 != 3 && err != nil:
				errs <- fmt.Errorf("minibatch %d: %w", i, err)
			case i%7 != 3 && !bytes.Equal(got, want(t, fs, bs[i])):
				errs <- fmt.Errorf("minibatch %d: rows differ from the store's", i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ep.Turn() != len(bs) {
		t.Fatalf("turn %d after %d minibatches", ep.Turn(), len(bs))
	}
}
