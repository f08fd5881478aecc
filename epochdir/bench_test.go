package epochdir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamsampler/streamsampler/epoch/epochtest"
)

// BenchmarkWriteRead measures persistence of the benchmark epoch (about
// 60 MB of arrays), fsyncs included, in MB of raw arrays per second.
func BenchmarkWriteRead(b *testing.B) {
	res := epochtest.Synthetic(1<<20, 100_000, []int{15, 10, 5}, 42)
	for _, comp := range []string{"", "zstd"} {
		name := comp
		if name == "" {
			name = "raw"
		}
		dir := b.TempDir()
		seq := 0 // the function runs several times (b.N = 1, then more)
		b.Run("write/"+name, func(b *testing.B) {
			b.SetBytes(res.Bytes())
			for i := 0; i < b.N; i++ {
				seq++
				if err := Write(filepath.Join(dir, fmt.Sprint("e", seq)), res, WriteOptions{Compress: comp}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(filepath.Join(dir, fmt.Sprint("e", seq)))
				b.StartTimer()
			}
		})
		path := filepath.Join(dir, "read")
		if err := Write(path, res, WriteOptions{Compress: comp}); err != nil {
			b.Fatal(err)
		}
		b.Run("read/"+name, func(b *testing.B) {
			b.SetBytes(res.Bytes())
			for i := 0; i < b.N; i++ {
				if _, err := Read(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
