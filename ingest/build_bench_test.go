package ingest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkBuild builds an R-MAT graph (scale 18, edge factor 12: 3.1 M
// edges) from bin32 and from text, and reports, beside edges/s, the ratio
// of the build time to an I/O floor measured in the same iteration: one
// sequential read of the input plus one sequential write (and fsync) of
// the output's size. The page cache is warm for both; bench/chunkify.sh is
// the full-size, O_DIRECT version.
func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	o := RMATOptions{Scale: 18, EdgeFactor: 12, Seed: 1}
	for _, name := range []string{"g.bin32", "g.txt"} {
		in := filepath.Join(dir, name)
		if err := WriteRMATFile(context.Background(), in, o, FormatAuto); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			var build, floor time.Duration
			var outBytes int64
			for b.Loop() {
				out := filepath.Join(dir, "out")
				t0 := time.Now()
				if _, err := Build(context.Background(), []string{in}, out, BuildOptions{Dedup: true, Force: true}); err != nil {
					b.Fatal(err)
				}
				build += time.Since(t0)
				st, err := os.Stat(filepath.Join(out, "edges.chunks"))
				if err != nil {
					b.Fatal(err)
				}
				outBytes = st.Size()
				floor += ioFloor(b, in, filepath.Join(dir, "floor.tmp"), outBytes)
			}
			b.ReportMetric(float64(o.NumEdges())*float64(b.N)/build.Seconds()/1e6, "Medges/s")
			b.ReportMetric(build.Seconds()/floor.Seconds(), "x-io-floor")
		})
	}
}

// ioFloor times reading in once and writing size bytes to tmp with fsync.
func ioFloor(b *testing.B, in, tmp string, size int64) time.Duration {
	t0 := time.Now()
	f, err := os.Open(in)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	if _, err := io.CopyBuffer(io.Discard, f, buf); err != nil {
		b.Fatal(err)
	}
	f.Close()
	w, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	for left := size; left > 0; left -= int64(len(buf)) {
		if _, err := w.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		b.Fatal(err)
	}
	w.Close()
	os.Remove(tmp)
	return time.Since(t0)
}
