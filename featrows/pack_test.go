package featrows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/featplan"
)

// packedPlan is a plan of bs whose misses are served from a packed copy
// (featplan.PackTo in a directory of the test's, under a disk model in
// which it always pays), with its node sets forgotten where asked.
func packedPlan(t *testing.T, rowBytes int64, numNodes uint32, bs [][]uint32, cacheRows int, forget bool) *featplan.Plan {
	t.Helper()
	p, err := featplan.NewPreloadedPlan(bs, numNodes, cacheRows, featplan.PackTo(t.TempDir(), rowBytes), featplan.PackModel(time.Second, time.Nanosecond, 1e12))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Packed() {
		t.Fatalf("cache of %d rows: the plan is not packed", cacheRows)
	}
	if forget {
		p.ForgetNodes(rowBytes)
	}
	return p
}

// TestPackedRows: an epoch whose misses come from a packed copy delivers
// exactly the store's rows of every n_id, to readers that arrive in any
// order, for caches (and so packed copies' partitions) of several sizes,
// node sets kept or forgotten; every row read from disk came from the
// copy, and closing the epoch half way ends its reading back.
func TestPackedRows(t *testing.T) {
	const n, dim = 3000, 256 // 1 KiB rows
	fs := store(t, n, dim, false)
	for _, tc := range []struct {
		cache   int
		forget  bool
		readers int
	}{
		{100, false, 1}, {100, true, 3}, {400, true, 2}, {900, false, 4},
	} {
		t.Run(fmt.Sprintf("cache%d/forget%v/readers%d", tc.cache, tc.forget, tc.readers), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.cache), 77))
			bs := batches(r, 40, 300, n)
			x := newExec(t, fs)
			ep, err := x.Epoch(0, packedPlan(t, fs.RowBytes(), n, bs, tc.cache, tc.forget))
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, len(bs))
			for g := range tc.readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < len(bs); i += tc.readers {
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
			if ep.Direct() && (rep.PackedRows == 0 || rep.PackedRows != rep.RowsFromDisk) {
				t.Fatalf("report %+v: every row from disk should come from the packed copy", rep)
			}

			// Another epoch of the same plan, closed half way.
			ep, err = x.Epoch(1, packedPlan(t, fs.RowBytes(), n, bs, tc.cache, tc.forget))
			if err != nil {
				t.Fatal(err)
			}
			for i := range len(bs) / 2 {
				if err := ep.Read(context.Background(), i, bs[i], nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := ep.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ep.Read(context.Background(), len(bs)/2, bs[len(bs)/2], nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("a read after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// TestPackedCorruptRow: a byte flipped in a row of the feature file
// before a packed epoch begins fails the minibatch that needs the row —
// not the packing before the first minibatch — with the defect naming the
// file, the row and its bytes; the minibatches before it are delivered
// as packed, the ones after it fail as the epoch's.
func TestPackedCorruptRow(t *testing.T) {
	const n, dim = 3000, 256
	fs := store(t, n, dim, false)
	path := fs.FeaturesPath()
	pristine, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rb := fs.RowBytes()
	r := rand.New(rand.NewPCG(5, 6))
	const node = 2222
	bs := batches(r, 30, 200, n)
	for i := range bs {
		bs[i] = slicesWithout(bs[i], node)
	}
	bs[19] = append(bs[19], node)
	at := int64(node)*rb + 100
	restore := flip(t, path, at)
	defer restore()
	x := newExec(t, fs)
	ep, err := x.Epoch(0, packedPlan(t, rb, n, bs, 200, true))
	if err != nil {
		t.Fatal(err)
	}
	if !ep.Direct() {
		t.Skip("no O_DIRECT here: nothing is packed")
	}
	for i, b := range bs {
		dst := make([]byte, int64(len(b))*rb)
		err := ep.Read(context.Background(), i, b, dst)
		switch {
		case i < 19:
			var wantRows []byte
			for _, v := range b {
				wantRows = append(wantRows, pristine[int64(v)*rb:int64(v+1)*rb]...)
			}
			if err != nil || !bytes.Equal(dst, wantRows) {
				t.Fatalf("minibatch %d: %v (rows as packed: %v)", i, err, bytes.Equal(dst, wantRows))
			}
		case i == 19:
			wantDefect(t, "minibatch 19", err, &fs.Manifest().Features.DataFile, at)
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "minibatch 19") {
				t.Fatalf("%q does not name %s and minibatch 19", err, path)
			}
		default:
			if !errors.Is(err, ErrEpochFailed) {
				t.Fatalf("minibatch %d after the failure: %v", i, err)
			}
		}
	}
}

func slicesWithout(s []uint32, v uint32) []uint32 {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
