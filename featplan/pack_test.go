package featplan

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// alwaysPack is a disk model under which a packed copy always pays.
var alwaysPack = PackModel(time.Second, time.Nanosecond, 1e12)

// packedPlan is a plan of batches with PackTo (a copy in a directory of
// its own), its staging set to staging bytes (0: packStaging's), and its
// node sets forgotten where asked.
func packedPlan(t *testing.T, batches [][]uint32, numNodes uint32, cache int, rowBytes, staging int64, forget bool, opts ...PlanOption) *Plan {
	t.Helper()
	opts = append([]PlanOption{PackTo(t.TempDir(), rowBytes), func(o *planOptions) { o.staging = staging }}, opts...)
	p, err := NewPreloadedPlan(batches, numNodes, cache, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if forget {
		p.ForgetNodes(rowBytes)
	}
	return p
}

// TestPackedMatchesReadAt: an epoch whose misses are served from a packed
// copy delivers, minibatch after minibatch, exactly the rows a ReadAt per
// row gives, for rows smaller and larger than a page, partitions of a few
// rows to many (a minibatch's misses spanning several), node sets kept or
// forgotten, and any extent options; every miss comes from the copy, the
// plan keeps its staging out of the cache, and the report counts the
// rows as the plan does.
func TestPackedMatchesReadAt(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range []struct {
		rowBytes       int64
		numNodes       uint32
		cache, staging int // rows
	}{
		{12, 30000, 1400, 1024}, {12, 30000, 1300, 1100},
		{512, 3000, 100, 24}, {512, 3000, 300, 150},
		{3000, 3000, 80, 4}, {3000, 3000, 300, 120},
		{4096, 3000, 200, 21},
		{9000, 3000, 60, 3}, {9000, 3000, 200, 39},
	} {
		for _, forget := range []bool{false, true} {
			t.Run(fmt.Sprintf("row%d/cache%d/staging%d/forget%v", tc.rowBytes, tc.cache, tc.staging, forget), func(t *testing.T) {
				path, data := writeFeatures(t, r, tc.numNodes, tc.rowBytes)
				batches := randomBatches(r, 25, 300, tc.numNodes, 1.1)
				p := packedPlan(t, batches, tc.numNodes, tc.cache, tc.rowBytes, int64(tc.staging)*tc.rowBytes, forget, alwaysPack)
				if !p.Packed() {
					t.Fatalf("the plan is not packed (%d misses)", p.TotalMisses())
				}
				if want := tc.cache - tc.staging; p.CacheRows != want {
					t.Fatalf("cache of %d rows, want %d (the staging set aside)", p.CacheRows, want)
				}
				f, direct, err := OpenDirect(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				o := ExtentOptions{MaxGap: int64(r.IntN(3)) * 4096, MaxExtent: 8192 + int64(r.IntN(4))*4096, Depth: r.IntN(6)}
				rd, err := NewReader(f, path, tc.rowBytes, p, o)
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				dst := make([]byte, 300*tc.rowBytes)
				var misses int64
				for b, nid := range batches {
					var got int
					if forget {
						got, err = rd.NextNodes(nid, dst)
					} else {
						got, err = rd.Next(dst)
					}
					if err != nil || got != b {
						t.Fatalf("minibatch %d: %d, %v", b, got, err)
					}
					for i, v := range nid {
						if !bytes.Equal(dst[int64(i)*tc.rowBytes:][:tc.rowBytes], data[int64(v)*tc.rowBytes:][:tc.rowBytes]) {
							t.Fatalf("minibatch %d row %d (node %d) differs from the file", b, i, v)
						}
					}
					misses += int64(p.Misses(b))
				}
				if _, err := rd.NextNodes(nil, dst); !errors.Is(err, ErrOrder) {
					t.Fatalf("NextNodes after the last minibatch: %v, want ErrOrder", err)
				}
				rep := rd.Report()
				if !direct {
					t.Logf("no O_DIRECT here: read at random (%+v)", rep)
					return
				}
				if rep.PackedRows != misses || rep.RowsFromDisk != misses || rep.PackBytes != misses*tc.rowBytes || rep.Reads == 0 || rep.Batches != len(batches) {
					t.Fatalf("report %+v: want %d rows packed, %d bytes", rep, misses, misses*tc.rowBytes)
				}
				if rep.RowsFromCache+rep.RowsFromDisk != rep.RowsNeeded || rep.CacheRows != p.CacheRows {
					t.Fatalf("report %+v", rep)
				}
			})
		}
	}
}

// TestPackDecision: PackTo keeps a packed copy where the disk model says
// it is faster than the random reads (misses dense in a small file), not
// where the misses are few and scattered over a large one, nor where the
// cache is too small for the copy to be written in large requests, whose
// plans then have the whole cache; a cache too small for three
// partitions is never packed.
func TestPackDecision(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	dense := randomBatches(r, 60, 2000, 100000, 0)
	p, err := NewPreloadedPlan(dense, 100000, 20000, PackTo(t.TempDir(), 512))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Packed() || p.CacheRows != 20000-int(packStaging(20000, 512)/512) {
		t.Fatalf("dense misses: packed %v, cache %d", p.Packed(), p.CacheRows)
	}
	// The same misses with a cache so small that the copy would be
	// written 4 KiB at a time: a write costs eight random reads.
	p, err = NewPreloadedPlan(dense, 100000, 1000, PackTo(t.TempDir(), 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Packed() || p.CacheRows != 1000 {
		t.Fatalf("a small cache: packed %v, cache %d", p.Packed(), p.CacheRows)
	}
	var sparse [][]uint32
	for b := range 40 {
		sparse = append(sparse, []uint32{uint32(b * 100000), uint32(b*100000 + 50000), uint32(b + 7)})
	}
	p, err = NewPreloadedPlan(sparse, 5_000_000, 20, PackTo(t.TempDir(), 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Packed() || p.CacheRows != 20 {
		t.Fatalf("sparse misses: packed %v, cache %d", p.Packed(), p.CacheRows)
	}
	p, err = NewPreloadedPlan(dense, 100000, 10, PackTo(t.TempDir(), 512), alwaysPack)
	if err != nil {
		t.Fatal(err)
	}
	if p.Packed() || p.CacheRows != 10 {
		t.Fatalf("a cache of 10 rows: packed %v, cache %d", p.Packed(), p.CacheRows)
	}
}

// TestPackedCheck: with a packed copy every row delivered was checked. A
// row the check refuses in the feature file fails the minibatch that
// needs it (not the packing before the first), with the check's error,
// naming the file and the minibatch; the minibatches before it are
// delivered. A row of the packed copy changed after it was packed is
// refused too, the error naming the copy and the row.
func TestPackedCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	const numNodes, rowBytes = 3000, 512
	path, data := writeFeatures(t, r, numNodes, rowBytes)
	errBad := errors.New("row refused")
	check := func(bad int64) func(off int64, b []byte) error {
		return func(off int64, b []byte) error {
			if off/rowBytes == bad || !bytes.Equal(b, data[off:off+rowBytes]) {
				return fmt.Errorf("row %d: %w", off/rowBytes, errBad)
			}
			return nil
		}
	}
	batches := randomBatches(r, 40, 300, numNodes, 0)
	const bad = 2999
	for b := range batches {
		batches[b] = slicesDelete(batches[b], bad)
	}
	batches[25] = append(batches[25], bad)
	f, direct, err := OpenDirect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !direct {
		t.Skip("no O_DIRECT here: nothing is packed")
	}

	// A row of the feature file refused.
	p := packedPlan(t, batches, numNodes, 400, rowBytes, 3*rowBytes*40, true, alwaysPack)
	o := DefaultExtentOptions()
	o.Check = check(bad)
	rd, err := NewReader(f, path, rowBytes, p, o)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 301*rowBytes)
	for b, nid := range batches {
		_, err := rd.NextNodes(nid, dst)
		if b < 25 {
			if err != nil {
				t.Fatalf("minibatch %d: %v", b, err)
			}
			continue
		}
		if !errors.Is(err, errBad) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "minibatch 25: ") || !strings.Contains(err.Error(), fmt.Sprintf("row %d", bad)) {
			t.Fatalf("minibatch %d: %v, want the refused row's error", b, err)
		}
		break
	}
	rd.Close()

	// A row of the packed copy changed under the reader.
	p = packedPlan(t, batches, numNodes, 400, rowBytes, 3*rowBytes*20, false, alwaysPack)
	o.Check = check(-1)
	rd, err = NewReader(f, path, rowBytes, p, o)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if _, err := rd.Next(dst); err != nil {
		t.Fatal(err)
	}
	pk := rd.pk
	if pk == nil || pk.nparts < 8 {
		t.Fatalf("packed copy %+v: want 8 partitions or more", pk)
	}
	// The last partition's first row: read back long after this.
	last := (pk.nparts - 1) * pk.part
	row := make([]byte, 4096)
	off := int64(pk.nparts-1)*pk.region + int64(pk.inv[last])*rowBytes
	page := off &^ 4095
	buf := alignedBuffer(4096)
	if _, err := pk.f.ReadAt(buf, page); err != nil {
		t.Fatal(err)
	}
	copy(row, buf)
	buf[off-page] ^= 0x5a
	if _, err := pk.f.WriteAt(buf, page); err != nil {
		t.Fatal(err)
	}
	var failed error
	for b := 1; b < len(batches); b++ {
		if _, err := rd.Next(dst); err != nil {
			failed = err
			break
		}
	}
	v := pk.rows[last]
	if !errors.Is(failed, errBad) || !strings.Contains(failed.Error(), fmt.Sprintf("the copy of row %d in %s", v, pk.name)) {
		t.Fatalf("a changed row of the packed copy: %v", failed)
	}
}

func slicesDelete(s []uint32, v uint32) []uint32 {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// TestPackedClose: a Reader closed in the middle of a packed epoch stops
// reading the copy back (no goroutine left), and its later minibatches
// fail instead of waiting.
func TestPackedClose(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	const numNodes, rowBytes = 4000, 512
	path, _ := writeFeatures(t, r, numNodes, rowBytes)
	f, direct, err := OpenDirect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !direct {
		t.Skip("no O_DIRECT here: nothing is packed")
	}
	before := runtime.NumGoroutine()
	batches := randomBatches(r, 50, 400, numNodes, 0)
	p := packedPlan(t, batches, numNodes, 300, rowBytes, 3*4096, false, alwaysPack)
	rd, err := NewReader(f, path, rowBytes, p, DefaultExtentOptions())
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 400*rowBytes)
	for range 3 {
		if _, err := rd.Next(dst); err != nil {
			t.Fatal(err)
		}
	}
	if rd.pk == nil {
		t.Fatal("not packed")
	}
	rd.Close()
	rd.Close()
	if _, err := rd.Next(dst); err == nil {
		t.Fatal("a minibatch delivered after Close")
	}
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 100 {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(rd.pk.name); !os.IsNotExist(err) {
		t.Fatalf("the packed copy %s is still there: %v", rd.pk.name, err)
	}
}

// TestPackedFallback: where the packed copy cannot be made (its directory
// is gone), the epoch is read at random, every row as the file's, and the
// report says why.
func TestPackedFallback(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	const numNodes, rowBytes = 3000, 512
	path, data := writeFeatures(t, r, numNodes, rowBytes)
	batches := randomBatches(r, 20, 300, numNodes, 0)
	dir := t.TempDir()
	p, err := NewPreloadedPlan(batches, numNodes, 300, PackTo(dir, rowBytes), alwaysPack)
	if err != nil || !p.Packed() {
		t.Fatalf("packed %v, %v", p != nil && p.Packed(), err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	f, _, err := OpenDirect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := NewReader(f, path, rowBytes, p, DefaultExtentOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	dst := make([]byte, 300*rowBytes)
	for b, nid := range batches {
		if _, err := rd.Next(dst); err != nil {
			t.Fatalf("minibatch %d: %v", b, err)
		}
		for i, v := range nid {
			if !bytes.Equal(dst[i*rowBytes:][:rowBytes], data[int(v)*rowBytes:][:rowBytes]) {
				t.Fatalf("minibatch %d row %d differs", b, i)
			}
		}
	}
	if rep := rd.Report(); rep.PackedRows != 0 || rep.PackError == "" || rep.RowsFromDisk == 0 {
		t.Fatalf("report %+v: want the rows read at random and why", rep)
	}
}
