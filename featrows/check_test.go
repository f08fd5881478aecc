package featrows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/featstore"
)

// flip flips one byte at off of file path (its size unchanged) and
// returns a function that restores it.
func flip(t *testing.T, path string, off int64) (restore func()) {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b := slices.Clone(orig)
	b[off] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// wantDefect checks that err is a featstore defect of the span of df
// holding byte off, naming the file, the rows and their bytes.
func wantDefect(t *testing.T, what string, err error, df *featstore.DataFile, off int64) {
	t.Helper()
	var d *featstore.DefectError
	span := off / df.CRCSpan
	if !errors.As(err, &d) || !errors.Is(err, featstore.ErrCorrupt) || d.File != df.File || d.Span != span {
		t.Fatalf("%s: %v, want the defect of %s span %d", what, err, df.File, span)
	}
	msg := fmt.Sprintf("%s: rows %d..%d (bytes %d..%d)", df.File, d.FirstRow, d.LastRow, d.Off, d.End-1)
	if d.FirstRow == d.LastRow {
		msg = fmt.Sprintf("%s: row %d (bytes %d..%d)", df.File, d.FirstRow, d.Off, d.End-1)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: %q does not name %q", what, err, msg)
	}
}

// TestCorruptRowsRefused flips a byte (the file's size unchanged) in a
// row of the feature file, and in a page of the label file, after the store was
// opened: every read that needs the row — a planned minibatch (no cache,
// a cache, every row preloaded; node sets kept or forgotten), a direct
// read — or the label's page — the labels of seeds — fails with the
// defect naming the file, the rows and their bytes, and every read that
// succeeds delivers the rows the store was packed with. None delivers a
// wrong row.
func TestCorruptRowsRefused(t *testing.T) {
	const n, dim = 3000, 16 // 64-byte rows
	fs := store(t, n, dim, true)
	path := fs.FeaturesPath()
	pristine, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rb := fs.RowBytes()
	rowsOf := func(nodes []uint32) []byte {
		var b []byte
		for _, v := range nodes {
			b = append(b, pristine[int64(v)*rb:int64(v+1)*rb]...)
		}
		return b
	}
	r := rand.New(rand.NewPCG(8, 9))
	for _, node := range []uint32{0, 1234, n - 1} {
		at := int64(node)*rb + 10
		restore := flip(t, path, at)
		for _, tc := range []struct {
			cache  int
			forget bool
		}{{0, false}, {200, true}, {n, false}, {n, true}} {
			bs := batches(r, 12, 80, n)
			bs[7] = append(bs[7], node) // the minibatch that needs the page
			slices.Sort(bs[7])
			bs[7] = slices.Compact(bs[7])
			x := newExec(t, fs)
			ep, err := x.Epoch(0, plan(t, fs, bs, tc.cache, tc.forget))
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("node %d flipped, cache %d, forget %v", node, tc.cache, tc.forget)
			failed := false
			for i, b := range bs {
				dst := make([]byte, int64(len(b))*rb)
				err := ep.Read(context.Background(), i, b, dst)
				if err == nil {
					if failed || !bytes.Equal(dst, rowsOf(b)) {
						t.Fatalf("%s: minibatch %d delivered (after a failure: %v), rows as packed: %v", what, i, failed, bytes.Equal(dst, rowsOf(b)))
					}
					continue
				}
				if !failed {
					// The first failure is the row's: at minibatch 7, which
					// needs it, or at 0 where every row is preloaded, or at an
					// earlier minibatch that needs it too.
					wantDefect(t, what, err, &fs.Manifest().Features.DataFile, at)
					if !strings.Contains(err.Error(), path) {
						t.Fatalf("%s: %q does not name %s", what, err, path)
					}
					if i > 7 || tc.cache == n && i != 0 {
						t.Fatalf("%s: minibatch %d failed first: %v", what, i, err)
					}
					failed = true
				} else if !errors.Is(err, ErrEpochFailed) {
					t.Fatalf("%s: minibatch %d after the failure: %v", what, i, err)
				}
			}
			if !failed {
				t.Fatalf("%s: every minibatch delivered", what)
			}
			x.Close()
		}
		x := newExec(t, fs)
		dst := make([]byte, 3*rb)
		_, err := x.ReadDirect([]uint32{(node + n/2) % n, node, 7}, dst)
		wantDefect(t, fmt.Sprintf("node %d flipped, direct read", node), err, &fs.Manifest().Features.DataFile, at)
		near := []uint32{(node + 1) % n, (node + n - 1) % n} // read in the same extent
		if _, err := x.ReadDirect(near, dst[:2*rb]); err != nil || !bytes.Equal(dst[:2*rb], rowsOf(near)) {
			t.Fatalf("node %d flipped: a direct read of the rows beside it: %v", node, err)
		}
		restore()
	}

	// A label flipped: the labels of seeds that need its page are refused.
	lpath := filepath.Join(filepath.Dir(path), fs.Manifest().Labels.File)
	restore := flip(t, lpath, 4*2500+1)
	x := newExec(t, fs)
	if _, err := x.Labels([]uint32{3, 2500}, nil); err == nil {
		t.Fatal("labels of a flipped page delivered")
	} else {
		wantDefect(t, "label flipped", err, &fs.Manifest().Labels.DataFile, 4*2500+1)
	}
	if _, err := x.Labels([]uint32{3, 4}, nil); err != nil {
		t.Fatalf("labels of another page: %v", err)
	}
	restore()
}

// TestStoreReplaced: a store replaced under a running Executor (chunkify
// features --force: a new generation, the old files removed) is still
// delivered whole at the generation it was opened at — the epochs begun
// after the replacement, direct reads and labels alike — and no
// minibatch fails; an Executor made for the old store afterwards is
// refused (ErrReplaced), not one reading another generation.
func TestStoreReplaced(t *testing.T) {
	const n, dim = 1500, 6
	fs := store(t, n, dim, true)
	path := fs.FeaturesPath()
	dir := filepath.Dir(path)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	oldY := make([]int32, n)
	all := make([]uint32, n)
	for i := range all {
		all[i] = uint32(i)
	}
	if err := fs.ReadLabels(all, oldY); err != nil {
		t.Fatal(err)
	}
	rb := fs.RowBytes()
	x := newExec(t, fs)
	r := rand.New(rand.NewPCG(1, 1))
	epoch := func(e uint32) {
		t.Helper()
		bs := batches(r, 6, 100, n)
		ep, err := x.Epoch(e, plan(t, fs, bs, 50, e%2 == 0))
		if err != nil {
			t.Fatalf("epoch %d: %v", e, err)
		}
		for i, b := range bs {
			dst := make([]byte, int64(len(b))*rb)
			if err := ep.Read(context.Background(), i, b, dst); err != nil {
				t.Fatalf("epoch %d, minibatch %d: %v", e, i, err)
			}
			for k, v := range b {
				if !bytes.Equal(dst[int64(k)*rb:int64(k+1)*rb], old[int64(v)*rb:int64(v+1)*rb]) {
					t.Fatalf("epoch %d, minibatch %d: node %d's row is not the opened generation's", e, i, v)
				}
			}
			y, err := x.Labels(b, nil)
			if err != nil {
				t.Fatalf("epoch %d, minibatch %d: labels: %v", e, i, err)
			}
			for k, v := range b {
				if y[k] != oldY[v] {
					t.Fatalf("epoch %d: node %d's label is not the opened generation's", e, v)
				}
			}
		}
	}
	epoch(0)
	w, err := featstore.Create(dir, featstore.Options{DType: featstore.Float32, Dim: dim, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(bytes.Repeat([]byte{7}, n*int(rb)))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the replaced generation's file is still there: %v", err)
	}
	for e := uint32(1); e < 5; e++ {
		epoch(e)
	}
	dst := make([]byte, 2*rb)
	if _, err := x.ReadDirect([]uint32{9, 1400}, dst); err != nil || !bytes.Equal(dst[:rb], old[9*rb:10*rb]) {
		t.Fatalf("direct read after the replacement: %v", err)
	}
	if _, err := New(fs); !errors.Is(err, ErrReplaced) {
		t.Fatalf("an Executor for the replaced store: %v, want ErrReplaced", err)
	}
	// The new store opens as the new generation.
	nfs, err := featstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer nfs.Close()
	nx := newExec(t, nfs)
	if _, err := nx.ReadDirect([]uint32{9}, dst[:rb]); err != nil || dst[0] != 7 {
		t.Fatalf("the new store: %v", err)
	}
}
