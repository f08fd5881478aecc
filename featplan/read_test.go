package featplan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// writeFeatures writes numNodes random rows of rowBytes bytes to a file in
// dir and returns its path and contents.
func writeFeatures(t *testing.T, r *rand.Rand, numNodes uint32, rowBytes int64) (string, []byte) {
	t.Helper()
	data := make([]byte, int64(numNodes)*rowBytes)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "features.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestReaderMatchesReadAt: every minibatch's rows, read through the plan
// (cache, extents, O_DIRECT where the file system allows it), equal the
// rows a plain ReadAt per row gives, byte for byte; the reader's report is
// the plan's.
func TestReaderMatchesReadAt(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, rowBytes := range []int64{4, 12, 512, 3000, 4096, 9000} {
		for _, cache := range []int{0, 7, 300, 2000} { // 2000: every row fits, preloaded
			t.Run(fmt.Sprintf("row%d/cache%d", rowBytes, cache), func(t *testing.T) {
				numNodes := uint32(500 + r.IntN(1500))
				path, _ := writeFeatures(t, r, numNodes, rowBytes)
				batches := randomBatches(r, 25, 200, numNodes, 1.2)
				p, err := NewPreloadedPlan(batches, numNodes, cache)
				if (p != nil && p.Preload() != nil) != (cache == 2000) {
					t.Fatalf("cache %d: preload %v", cache, p.Preload() != nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				f, direct, err := OpenDirect(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				t.Logf("O_DIRECT %v", direct)
				ref, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Close()
				o := ExtentOptions{MaxGap: int64(r.IntN(3)) * 4096, MaxExtent: 8192 + int64(r.IntN(4))*4096, Depth: r.IntN(6)}
				rd, err := NewReader(f, path, rowBytes, p, o)
				if err != nil {
					t.Fatal(err)
				}
				dst := make([]byte, 200*rowBytes)
				row := make([]byte, rowBytes)
				for b, nid := range batches {
					got, err := rd.Next(dst)
					if err != nil || got != b {
						t.Fatalf("Next = %d, %v; want %d", got, err, b)
					}
					for i, v := range nid {
						if _, err := ref.ReadAt(row, int64(v)*rowBytes); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(dst[int64(i)*rowBytes:int64(i+1)*rowBytes], row) {
							t.Fatalf("minibatch %d row %d (node %d) differs from the file", b, i, v)
						}
					}
				}
				if _, err := rd.Next(dst); !errors.Is(err, ErrOrder) {
					t.Fatalf("Next after the last minibatch: %v, want ErrOrder", err)
				}
				want, err := p.Report(rowBytes, o)
				if err != nil {
					t.Fatal(err)
				}
				if got := rd.Report(); got != want {
					t.Fatalf("reader report %+v, plan report %+v", got, want)
				}
			})
		}
	}
}

func TestReaderErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	path, data := writeFeatures(t, r, 100, 64)
	p, err := NewPlan([][]uint32{{1, 99}}, 100, 4)
	if err != nil {
		t.Fatal(err)
	}
	// A file shorter than num_nodes rows.
	short := filepath.Join(t.TempDir(), "short.bin")
	if err := os.WriteFile(short, data[:50*64], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(short)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewReader(f, short, 64, p, DefaultExtentOptions()); !errors.Is(err, ErrInput) {
		t.Fatalf("short file: %v, want ErrInput", err)
	}
	// A reader without Stat that ends early: the read fails, naming it.
	rd, err := NewReader(bytes.NewReader(data[:50*64]), "mem", 64, p, DefaultExtentOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(make([]byte, 2*64)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated: %v, want io.ErrUnexpectedEOF", err)
	}
	// A destination too small.
	g, _, err := OpenDirect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rd, err = NewReader(g, path, 64, p, DefaultExtentOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(make([]byte, 64)); !errors.Is(err, ErrInput) {
		t.Fatalf("small buffer: %v, want ErrInput", err)
	}
}

// TestReaderLargeBatches: minibatches large enough that the cache hits are
// copied on several goroutines give the rows a per-row ReadAt gives.
func TestReaderLargeBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const numNodes, rowBytes = 60000, 12
	path, _ := writeFeatures(t, r, numNodes, rowBytes)
	// Four minibatches of 2.5·hitsPerWorker distinct nodes: at least two
	// copying goroutines each on two cores.
	var batches [][]uint32
	for range 4 {
		perm := r.Perm(numNodes)[:5*hitsPerWorker/2]
		nid := make([]uint32, len(perm))
		for i, v := range perm {
			nid[i] = uint32(v)
		}
		batches = append(batches, nid)
	}
	for _, plan := range []func() (*Plan, error){
		func() (*Plan, error) { return NewPreloadedPlan(batches, numNodes, numNodes) }, // every access a hit
		func() (*Plan, error) { return NewPlan(batches, numNodes, numNodes/2) },
	} {
		p, err := plan()
		if err != nil {
			t.Fatal(err)
		}
		f, _, err := OpenDirect(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ref, _ := os.Open(path)
		defer ref.Close()
		rd, err := NewReader(f, path, rowBytes, p, DefaultExtentOptions())
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, 3*hitsPerWorker*rowBytes)
		row := make([]byte, rowBytes)
		for b, nid := range batches {
			if _, err := rd.Next(dst); err != nil {
				t.Fatal(err)
			}
			for i, v := range nid {
				ref.ReadAt(row, int64(v)*rowBytes)
				if !bytes.Equal(dst[i*rowBytes:(i+1)*rowBytes], row) {
					t.Fatalf("minibatch %d row %d (node %d) differs", b, i, v)
				}
			}
		}
	}
}

// TestReadRows: the rows of a node set read without a plan equal the
// file's rows for those nodes, in the set's order, for rows smaller and
// larger than a page and any extent shape; the report counts every row
// from disk and the extents Extents gives; bad input is refused.
func TestReadRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		rowBytes int64
		numNodes uint32
		size     int
		o        ExtentOptions
	}{
		{4, 3000, 1, DefaultExtentOptions()},
		{12, 3000, 700, DefaultExtentOptions()},
		{512, 2000, 2000, DefaultExtentOptions()}, // every node
		{3000, 800, 90, ExtentOptions{MaxGap: 0, MaxExtent: 8192, Depth: 1}},
		{4096, 500, 120, ExtentOptions{MaxGap: 4096, MaxExtent: 16384, Depth: 5}},
		{9000, 300, 40, ExtentOptions{MaxGap: 8192, MaxExtent: 4096, Depth: 0}},
	} {
		t.Run(fmt.Sprintf("row%d/n%d", tc.rowBytes, tc.size), func(t *testing.T) {
			path, data := writeFeatures(t, r, tc.numNodes, tc.rowBytes)
			nid := r.Perm(int(tc.numNodes))[:tc.size]
			ids := make([]uint32, len(nid))
			for i, v := range nid {
				ids[i] = uint32(v)
			}
			f, _, err := OpenDirect(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			dst := make([]byte, int64(len(ids))*tc.rowBytes)
			rep, err := ReadRows(f, path, tc.rowBytes, ids, dst, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range ids {
				if !bytes.Equal(dst[int64(i)*tc.rowBytes:][:tc.rowBytes], data[int64(v)*tc.rowBytes:][:tc.rowBytes]) {
					t.Fatalf("row %d (node %d) differs from the file", i, v)
				}
			}
			sorted := slices.Clone(ids)
			slices.Sort(sorted)
			ext, err := Extents(nil, sorted, tc.rowBytes, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var bytesRead int64
			for _, e := range ext {
				bytesRead += e.Length
			}
			n := int64(len(ids))
			if rep.RowsNeeded != n || rep.RowsFromDisk != n || rep.RowsFromCache != 0 || rep.Reads != int64(len(ext)) ||
				rep.BytesRead != bytesRead || rep.DiskRowBytes != n*tc.rowBytes || rep.CompulsoryBytes != n*tc.rowBytes || rep.Batches != 1 {
				t.Fatalf("report %+v; want %d rows, %d reads of %d bytes", rep, n, len(ext), bytesRead)
			}
		})
	}
	_, data := writeFeatures(t, r, 100, 64)
	for _, tc := range []struct {
		name string
		src  []byte
		ids  []uint32
		dst  int
		want error
	}{
		{"repeated node", data, []uint32{5, 9, 5}, 3 * 64, ErrInput},
		{"small buffer", data, []uint32{5, 9}, 64, ErrInput},
		{"past the end", data[:50*64], []uint32{3, 70}, 2 * 64, io.ErrUnexpectedEOF},
	} {
		if _, err := ReadRows(bytes.NewReader(tc.src), "mem", 64, tc.ids, make([]byte, tc.dst), DefaultExtentOptions()); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestReaderForgottenNodes: a plan that forgot its node sets, executed with
// the n_id given to NextNodes, reads the same rows and reports the same
// figures (the optimum kept from before) as the plan that kept them; an
// n_id other than the planned one is refused.
func TestReaderForgottenNodes(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const numNodes, rowBytes = 3000, 100
	path, _ := writeFeatures(t, r, numNodes, rowBytes)
	batches := randomBatches(r, 20, 200, numNodes, 1.2)
	for _, cache := range []int{50, 3000} {
		kept, err := NewPreloadedPlan(batches, numNodes, cache)
		if err != nil {
			t.Fatal(err)
		}
		forgot, _ := NewPreloadedPlan(batches, numNodes, cache)
		forgot.ForgetNodes(rowBytes)
		if !forgot.Forgotten() || forgot.Batch(0).NID != nil {
			t.Fatal("node sets still held")
		}
		if _, err := forgot.Report(rowBytes, DefaultExtentOptions()); !errors.Is(err, ErrInput) {
			t.Fatalf("Report of a forgotten plan: %v", err)
		}
		open := func(p *Plan) *Reader {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			rd, err := NewReader(f, path, rowBytes, p, DefaultExtentOptions())
			if err != nil {
				t.Fatal(err)
			}
			return rd
		}
		a, b := open(kept), open(forgot)
		if _, err := b.Next(make([]byte, 200*rowBytes)); !errors.Is(err, ErrInput) {
			t.Fatalf("Next on a forgotten plan: %v", err)
		}
		x, y := make([]byte, 200*rowBytes), make([]byte, 200*rowBytes)
		for i, nid := range batches {
			if len(nid) > 1 {
				wrong := slices.Clone(nid)
				wrong[0], wrong[1] = wrong[1], wrong[0]
				if _, err := b.NextNodes(wrong, y); !errors.Is(err, ErrInput) {
					t.Fatalf("minibatch %d: a reordered n_id accepted: %v", i, err)
				}
			}
			if _, err := a.Next(x); err != nil {
				t.Fatal(err)
			}
			if _, err := b.NextNodes(nid, y); err != nil {
				t.Fatal(err)
			}
			if n := len(nid) * rowBytes; !bytes.Equal(x[:n], y[:n]) {
				t.Fatalf("minibatch %d: rows differ", i)
			}
		}
		if ra, rb := a.Report(), b.Report(); ra != rb || ra.OptimumBytes == 0 {
			t.Fatalf("reports differ:\n%+v\n%+v", ra, rb)
		}
	}
}

// TestCheck: ExtentOptions.Check sees every row read from the file, with
// its offset and the file's bytes, before it is placed: every row
// delivered — from disk, or from a cache slot a read filled — was
// checked, and each row read is checked once per read. A check that
// refuses one row fails the minibatch (and ReadRows) that reads it, with
// its error wrapped, naming the file and the minibatch; minibatches that
// do not need the row are delivered, even where their reads span it.
func TestCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, rowBytes := range []int64{12, 512, 5000} {
		numNodes := uint32(2000)
		path, data := writeFeatures(t, r, numNodes, rowBytes)
		var mu sync.Mutex
		checked := make([]bool, numNodes) // rows a check passed
		check := func(off int64, b []byte) error {
			if off%rowBytes != 0 || int64(len(b)) != rowBytes || !bytes.Equal(b, data[off:off+rowBytes]) {
				return fmt.Errorf("check of %d bytes at %d: not a row of the file", len(b), off)
			}
			mu.Lock()
			checked[off/rowBytes] = true
			mu.Unlock()
			return nil
		}
		f, _, err := OpenDirect(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		batches := randomBatches(r, 20, 150, numNodes, 1.2)
		batches = append(batches, []uint32{numNodes - 1}) // the file's last bytes
		for _, cache := range []int{0, 100, int(numNodes)} {
			clear(checked)
			p, err := NewPreloadedPlan(batches, numNodes, cache)
			if err != nil {
				t.Fatal(err)
			}
			o := DefaultExtentOptions()
			o.Check = check
			rd, err := NewReader(f, path, rowBytes, p, o)
			if err != nil {
				t.Fatal(err)
			}
			for b, nid := range batches {
				dst := make([]byte, int64(len(nid))*rowBytes)
				if _, err := rd.Next(dst); err != nil {
					t.Fatalf("row %d, cache %d, minibatch %d: %v", rowBytes, cache, b, err)
				}
				for i, v := range nid {
					if !checked[v] || !bytes.Equal(dst[int64(i)*rowBytes:][:rowBytes], data[int64(v)*rowBytes:][:rowBytes]) {
						t.Fatalf("row %d, cache %d, minibatch %d: node %d delivered unchecked or wrong", rowBytes, cache, b, v)
					}
				}
			}
		}

		// A check that refuses node 1000's row.
		errBad := errors.New("row refused")
		o := DefaultExtentOptions()
		o.Check = func(off int64, b []byte) error {
			if off == 1000*rowBytes {
				return errBad
			}
			return nil
		}
		ps, err := NewPlan([][]uint32{{3, 999, 1001}, {1000, 7}, {5, 6}}, numNodes, 0)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := NewReader(f, path, rowBytes, ps, o)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, 3*rowBytes)
		if _, err := rd.Next(dst); err != nil {
			t.Fatalf("row %d: the rows beside the refused one: %v", rowBytes, err)
		}
		if _, err := rd.Next(dst); !errors.Is(err, errBad) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "minibatch 1: ") {
			t.Fatalf("row %d: the minibatch of the refused row: %v", rowBytes, err)
		}
		if _, err := ReadRows(f, path, rowBytes, []uint32{4, 1000}, dst, o); !errors.Is(err, errBad) {
			t.Fatalf("row %d: ReadRows of the refused row: %v", rowBytes, err)
		}
		if _, err := ReadRows(f, path, rowBytes, []uint32{4, 999, 1001}, dst, o); err != nil {
			t.Fatalf("row %d: ReadRows beside the refused row: %v", rowBytes, err)
		}
	}
}
