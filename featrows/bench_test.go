package featrows

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/featplan"
)

// skewedEpoch is an epoch of nb minibatches of size distinct nodes out
// of n, drawn with a Zipf law over a shuffled id space (neighbourhood
// sampling favours high-degree nodes, scattered over the ids), as
// featplan's benchmarks draw theirs.
func skewedEpoch(nb, size int, n uint32) [][]uint32 {
	r := rand.New(rand.NewPCG(31, 32))
	z := rand.NewZipf(r, 1.05, 8, uint64(n-1))
	perm := r.Perm(int(n))
	mark := make([]int32, n)
	out := make([][]uint32, nb)
	for b := range out {
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

// BenchmarkCheckedEpoch measures what checking every row delivered costs
// a feature epoch: one epoch's plan (64 minibatches of 8192 skewed nodes
// out of 2^19 rows of 256 bytes, a 128 MiB store; a cache of 5% of the
// rows) executed by featplan.Reader with the store's per-row CRCs
// (featstore.Checksums.Check, as featrows always reads) and without, in
// lockstep over the same file. It reports both epochs' times,
// checked/unchecked — their ratio: the check's cost is ratio − 1 —, and
// the bytes read and delivered from disk (their ratio is what a CRC per
// page instead would have checked: 16.7 times the rows). o_direct reads
// the file as featrows does (the disk's speed); page_cache reads it
// buffered from memory after a warm-up, the worst case for the check (the
// reads cost least there). docs/PERFORMANCE.md has the figures.
func BenchmarkCheckedEpoch(b *testing.B) {
	const n, dim = 1 << 19, 64
	fs := store(b, n, dim, false)
	rb := fs.RowBytes()
	epoch := skewedEpoch(64, 8192, n)
	p, err := featplan.NewPlan(epoch, n, n/20)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 8192*rb)
	for _, direct := range []bool{true, false} {
		name := "page_cache"
		if direct {
			name = "o_direct"
		}
		b.Run(name, func(b *testing.B) {
			var f *os.File
			if direct {
				d, ok, err := featplan.OpenDirect(fs.FeaturesPath())
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					d.Close()
					b.Skip("no O_DIRECT on this file system")
				}
				f = d
			} else {
				if f, err = os.Open(fs.FeaturesPath()); err != nil {
					b.Fatal(err)
				}
				if _, err := f.ReadAt(make([]byte, n*rb), 0); err != nil {
					b.Fatal(err)
				}
			}
			defer f.Close()
			reader := func(check bool) *featplan.Reader {
				o := featplan.DefaultExtentOptions()
				if check {
					o.Check = fs.FeatureChecksums().Check
				}
				r, err := featplan.NewReader(f, fs.FeaturesPath(), rb, p, o)
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			next := func(r *featplan.Reader) time.Duration {
				t0 := time.Now()
				if _, err := r.Next(dst); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			// The two readers go through the plan in lockstep, minibatch
			// by minibatch, which goes first alternating: both read the
			// same extents at nearly the same moment, so that the drift of
			// a shared machine (and of its disk) falls on both alike.
			var checked, unchecked time.Duration
			var read int64 // bytes an epoch reads
			iters := 0
			for b.Loop() {
				b.StopTimer()
				var rc, ru *featplan.Reader
				if iters%2 == 0 { // which is made first alternates too
					rc, ru = reader(true), reader(false)
				} else {
					ru, rc = reader(false), reader(true)
				}
				b.StartTimer()
				for i := range epoch {
					if (i+iters)%2 == 0 {
						unchecked += next(ru)
						checked += next(rc)
					} else {
						checked += next(rc)
						unchecked += next(ru)
					}
				}
				read = ru.Report().BytesRead
				b.ReportMetric(float64(ru.Report().DiskRowBytes)/1e9, "GB-rows-from-disk/epoch")
				iters++
			}
			b.ReportMetric(float64(unchecked.Milliseconds())/float64(iters), "ms-unchecked/epoch")
			b.ReportMetric(float64(checked.Milliseconds())/float64(iters), "ms-checked/epoch")
			b.ReportMetric(float64(checked)/float64(unchecked), "checked/unchecked")
			b.ReportMetric(float64(read)/1e9, "GB-read/epoch")
		})
	}
}

// BenchmarkCheckRows is the check's rate: featstore.Checksums.Check of
// every 256-byte row of 1 MiB, one call a row as featplan's reads make
// them, GB/s of checked bytes.
func BenchmarkCheckRows(b *testing.B) {
	const rb = 256
	fs := store(b, 1<<12, rb/4, false) // 1 MiB
	buf, err := os.ReadFile(fs.FeaturesPath())
	if err != nil {
		b.Fatal(err)
	}
	c := fs.FeatureChecksums()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		for off := int64(0); off < int64(len(buf)); off += rb {
			if err := c.Check(off, buf[off:off+rb]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
