package featplan

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/featstore"
)

// benchTrace is a skewed epoch: nb minibatches of size distinct nodes out of
// numNodes, drawn with a Zipf law (as neighbourhood sampling favours
// high-degree nodes), ids scattered over the id space.
func benchTrace(nb, size int, numNodes uint32) [][]uint32 {
	r := rand.New(rand.NewPCG(21, 22))
	z := rand.NewZipf(r, 1.05, 8, uint64(numNodes-1))
	perm := r.Perm(int(numNodes))
	mark := make([]int32, numNodes)
	out := make([][]uint32, nb)
	for b := range out {
		out[b] = make([]uint32, 0, size)
		for len(out[b]) < size {
			v := uint32(perm[z.Uint64()])
			if mark[v] != int32(b+1) {
				mark[v] = int32(b + 1)
				out[b] = append(out[b], v)
			}
		}
	}
	return out
}

// BenchmarkPlan: ns per access of NewPlan and of the LRU baseline on the
// same trace, with both miss ratios (misses/accesses).
func BenchmarkPlan(b *testing.B) {
	const numNodes = 2_000_000
	batches := benchTrace(200, 20_000, numNodes)
	accesses := float64(200 * 20_000)
	for _, frac := range []float64{0.01, 0.1} {
		cache := int(frac * numNodes)
		b.Run(fmt.Sprintf("MIN/cache%.0f%%", frac*100), func(b *testing.B) {
			var misses int64
			for b.Loop() {
				p, err := NewPlan(batches, numNodes, cache)
				if err != nil {
					b.Fatal(err)
				}
				misses = p.TotalMisses()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/accesses, "ns/access")
			b.ReportMetric(float64(misses)/accesses, "miss-ratio")
		})
		b.Run(fmt.Sprintf("LRU/cache%.0f%%", frac*100), func(b *testing.B) {
			var misses int64
			for b.Loop() {
				m, err := LRUMisses(batches, numNodes, cache)
				if err != nil {
					b.Fatal(err)
				}
				misses = m
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/accesses, "ns/access")
			b.ReportMetric(float64(misses)/accesses, "miss-ratio")
		})
	}
}

// BenchmarkMatchReorder: 1000 minibatches of 50k nodes (5·10^7 accesses)
// out of 10^7 nodes.
func BenchmarkMatchReorder(b *testing.B) {
	const numNodes = 10_000_000
	batches := benchTrace(1000, 50_000, numNodes)
	for b.Loop() {
		_, rep, err := MatchReorder(batches, numNodes, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rep.SharedBefore, "shared-before")
		b.ReportMetric(rep.SharedAfter, "shared-after")
	}
}

// BenchmarkReadSize measures what MaxGap trades: random aligned O_DIRECT
// reads of growing size from a 256 MiB file. The request cost is the time of
// a 4 KiB read; the byte cost the slope between sizes; reading a hole is
// cheaper than a new request while hole·(byte cost) < request cost.
func BenchmarkReadSize(b *testing.B) {
	const fileBytes = 256 << 20
	_, f := directFile(b, fileBytes)
	for _, depth := range []int{1, DefaultDepth} {
		for _, size := range []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20} {
			bufs := make([][]byte, depth)
			for i := range bufs {
				bufs[i] = alignedBuffer(size)
			}
			b.Run(fmt.Sprintf("depth%d/%dKiB", depth, size>>10), func(b *testing.B) {
				// Each iteration is depth random reads in flight at once.
				var wg sync.WaitGroup
				for b.Loop() {
					for w := range depth {
						wg.Add(1)
						go func() {
							defer wg.Done()
							r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
							off := r.Int64N((fileBytes-size)/Align) * Align
							if _, err := f.ReadAt(bufs[w], off); err != nil {
								b.Error(err)
							}
						}()
					}
					wg.Wait()
				}
				b.SetBytes(size * int64(depth))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth)/1e3, "µs/read")
			})
		}
	}
}

// BenchmarkReadRows: one minibatch's rows outside any plan (sample
// --features): ReadRows (extents, DefaultDepth in flight) over an O_DIRECT
// file and over a buffered one, against featstore's ReadRows (sorted,
// coalesced, one buffered read at a time); buffered, with the file's pages
// evicted before every minibatch (cold, as O_DIRECT always is) and kept
// (warm). Rows of 512 bytes in a 256 MiB file; a sparse minibatch (4096
// rows, one per 64 KiB on average: random reads) and a dense one (65536
// rows, one per 4 KiB: long coalesced reads).
//
// On the development VM (2026-11-24, three interleaved runs of
// -benchtime 6x, medians, ms; the machine was loaded): sparse: direct 84,
// buffered cold 73, warm 20; featstore cold 233, warm 2.9. Dense: direct
// 195, buffered cold 147, warm 26; featstore cold 109, warm 33. Sixteen
// requests in flight make the sparse cold case three times faster than
// one at a time; the page cache costs a cold read nothing and serves a
// repeated one. So sample --features reads buffered with ReadRows.
func BenchmarkReadRows(b *testing.B) {
	const numNodes, rowBytes = 1 << 19, 512
	path, direct := directFile(b, numNodes*rowBytes)
	buffered, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer buffered.Close()
	m := &featstore.Manifest{NumNodes: numNodes, Features: featstore.Features{RowBytes: rowBytes,
		DataFile: featstore.DataFile{File: filepath.Base(path), Size: numNodes * rowBytes, CRCSpan: rowBytes}}}
	st, err := featstore.NewStore(m, buffered, nil, featstore.ChecksumsOf(make([]byte, numNodes*rowBytes), rowBytes), nil)
	if err != nil {
		b.Fatal(err)
	}
	evict := func() {
		if err := dropFileCache(buffered); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{4096, 65536} {
		nid := make([]uint32, size)
		for i, v := range r.Perm(numNodes)[:size] {
			nid[i] = uint32(v)
		}
		dst := make([]byte, size*rowBytes)
		b.Run(fmt.Sprintf("rows%d/ReadRows/direct", size), func(b *testing.B) {
			for b.Loop() {
				if _, err := ReadRows(direct, path, rowBytes, nid, dst, DefaultExtentOptions()); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(size) * rowBytes)
		})
		for _, cold := range []bool{true, false} {
			b.Run(fmt.Sprintf("rows%d/ReadRows/buffered/cold=%v", size, cold), func(b *testing.B) {
				for b.Loop() {
					if cold {
						b.StopTimer()
						evict()
						b.StartTimer()
					}
					if _, err := ReadRows(buffered, path, rowBytes, nid, dst, DefaultExtentOptions()); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(size) * rowBytes)
			})
			b.Run(fmt.Sprintf("rows%d/featstore/cold=%v", size, cold), func(b *testing.B) {
				for b.Loop() {
					if cold {
						b.StopTimer()
						evict()
						b.StartTimer()
					}
					if err := st.ReadRows(nid, dst); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(size) * rowBytes)
			})
		}
	}
}

// BenchmarkReadDepth: the executor's random-read rate (reads/s) as a
// function of the reads it keeps in flight (ExtentOptions.Depth), on a
// 1 GiB file read with O_DIRECT, one 4 KiB row per read (16384 random rows
// a minibatch, no two adjacent): through Linux AIO (aio), as ReadRows
// reads an O_DIRECT file, and through Depth goroutines calling pread (the
// same file behind a plain io.ReaderAt), against fio on the same file at
// the same depth (`fio --rw=randread --bs=4k --direct=1 --ioengine=io_uring
// --iodepth=D`, 3 s; where fio is installed), measured in the same run.
func BenchmarkReadDepth(b *testing.B) {
	const rowBytes, numRows, perBatch = 4096, 1 << 18, 16384
	path, direct := directFile(b, numRows*rowBytes)
	r := rand.New(rand.NewPCG(3, 4))
	dst := make([]byte, perBatch*rowBytes)
	for _, depth := range []int{16, 32, 64, 128} {
		for _, how := range []string{"aio", "pread"} {
			b.Run(fmt.Sprintf("depth%d/%s", depth, how), func(b *testing.B) {
				o := DefaultExtentOptions()
				o.Depth, o.MaxGap = depth, 0
				var f io.ReaderAt = direct
				if how == "pread" {
					f = struct{ io.ReaderAt }{direct}
				}
				reads := 0
				for b.Loop() {
					// Every other row, so that no two rows share an extent.
					nid := make([]uint32, perBatch)
					for i, v := range r.Perm(numRows / 2)[:perBatch] {
						nid[i] = uint32(2 * v)
					}
					rep, err := ReadRows(f, path, rowBytes, nid, dst, o)
					if err != nil {
						b.Fatal(err)
					}
					reads += int(rep.Reads)
				}
				b.ReportMetric(float64(reads)/b.Elapsed().Seconds(), "reads/s")
			})
		}
		b.Run(fmt.Sprintf("depth%d/fio", depth), func(b *testing.B) {
			if _, err := exec.LookPath("fio"); err != nil {
				b.Skip("no fio")
			}
			var iops float64
			for b.Loop() {
				out, err := exec.Command("fio", "--name=rand", "--filename="+path, "--rw=randread", "--bs=4k", "--direct=1",
					"--ioengine=io_uring", fmt.Sprintf("--iodepth=%d", depth), "--runtime=3", "--time_based",
					"--output-format=terse", "--terse-version=3").Output()
				if err != nil {
					b.Skipf("fio: %v", err)
				}
				fields := strings.Split(string(out), ";")
				if len(fields) < 8 {
					b.Skipf("fio: %q", out)
				}
				if iops, err = strconv.ParseFloat(fields[7], 64); err != nil {
					b.Skipf("fio: %q", out)
				}
			}
			b.ReportMetric(iops, "reads/s")
		})
	}
}

// directFile writes a file of size zero bytes (written and synced: clean
// pages are what FADV_DONTNEED evicts; BenchmarkReadRows's checksums are
// of zeros) and opens it with
// O_DIRECT for the benchmark, which is skipped where the file system
// refuses O_DIRECT; the file is closed when the benchmark ends.
func directFile(b *testing.B, size int64) (path string, direct *os.File) {
	b.Helper()
	path = filepath.Join(b.TempDir(), "features-1.bin")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	direct, isDirect, err := OpenDirect(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	if !isDirect {
		b.Skip("no O_DIRECT on this file system")
	}
	return path, direct
}

// BenchmarkPackedEpoch: one out-of-core epoch (2 M rows of 512 bytes, a
// 1 GiB file read with O_DIRECT; 48 skewed minibatches of 40 000 rows, a
// cache of a tenth of the rows, so that MIN reads a few thousand rows a
// minibatch scattered over the whole file) executed with random reads
// (the extents, Depth in flight) and from a packed copy (PackTo), against
// the peer measured in the same run: one sequential O_DIRECT read of the
// file (4 MiB reads, three in flight). Reports each epoch's seconds, its
// ratio to that read, and the random path's reads/s.
func BenchmarkPackedEpoch(b *testing.B) {
	const numRows, rowBytes = 1 << 21, 512
	path, f := directFile(b, numRows*rowBytes)
	batches := benchTrace(48, 40_000, numRows)
	seq := func() float64 {
		ext := []Extent{}
		for off := int64(0); off < numRows*rowBytes; off += packSweepExtent {
			ext = append(ext, Extent{Offset: off, Length: packSweepExtent})
		}
		t0 := time.Now()
		if err := streamExtents(f, ext, packSweepDepth, numRows*rowBytes, func(Extent, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0).Seconds()
	}
	for _, packed := range []bool{false, true} {
		var opts []PlanOption
		if packed {
			opts = append(opts, PackTo(b.TempDir(), rowBytes))
		}
		p, err := NewPreloadedPlan(batches, numRows, numRows/10, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if p.Packed() != packed {
			b.Fatalf("packed %v, want %v", p.Packed(), packed)
		}
		b.Run(fmt.Sprintf("packed=%v", packed), func(b *testing.B) {
			dst := make([]byte, 40_000*rowBytes)
			var epoch, sweep float64
			var rep Report
			for b.Loop() {
				b.StopTimer()
				sweep += seq()
				b.StartTimer()
				t0 := time.Now()
				rd, err := NewReader(f, path, rowBytes, p, DefaultExtentOptions())
				if err != nil {
					b.Fatal(err)
				}
				for range batches {
					if _, err := rd.Next(dst); err != nil {
						b.Fatal(err)
					}
				}
				epoch += time.Since(t0).Seconds()
				rep = rd.Report()
				rd.Close()
			}
			n := float64(b.N)
			b.ReportMetric(epoch/n, "s/epoch")
			b.ReportMetric(sweep/n, "s/seq-read")
			b.ReportMetric(epoch/sweep, "x-seq-read")
			if !packed {
				b.ReportMetric(float64(rep.Reads)*n/epoch, "reads/s")
			}
			b.ReportMetric(float64(rep.RowsFromDisk), "rows-from-disk")
		})
	}
}
