package xrt

import (
	"os"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/rng"
)

// BenchmarkEmulatorRun measures one SampleKernel run through the emulated
// device (Start, queue, Wait) against calling hls.Run directly on the same
// data, and reports the ratio: the emulator's overhead per run.
//
//	go test -run '^$' -bench EmulatorRun -count 5 ./xrt/
func BenchmarkEmulatorRun(b *testing.B) {
	for _, nt := range []int{16, 4096} {
		b.Run(map[int]string{16: "targets=16", 4096: "targets=4096"}[nt], func(b *testing.B) {
			g := newTestGraph(8192, 8192, 64, 2<<20)
			dev, uuid := openEmu(b, EmulatorConfig{})
			ts := g.targets(0, func(v uint32) bool { return int(v)%(8192/nt) == 0 })
			const fanout = 15
			k := must[Kernel](b)(dev.OpenKernel(uuid, SampleKernel))
			chunk := must[BO](b)(dev.AllocBO(g.chunkSize, BOP2P, 0))
			cb := must[[]byte](b)(chunk.Map())
			copy(cb, g.chunk(b, 0))
			tb := must[BO](b)(dev.AllocBO(4*len(ts), BONormal, 0))
			putU32s(must[[]byte](b)(tb.Map()), ts)
			tb.Sync(ToDevice, tb.Size(), 0)
			rb := must[BO](b)(dev.AllocBO(4*len(ts)*fanout, BONormal, 0))
			run := must[Run](b)(k.NewRun())
			key := rng.Key(1, 2, 3)
			for _, err := range []error{run.SetBO(0, chunk), run.SetBO(1, rb), run.SetBO(2, tb), run.SetUint32(3, uint32(len(ts))),
				run.SetUint32(4, fanout), run.SetUint64(5, key), run.SetUint32(6, 0), run.SetUint32(7, 0)} {
				if err != nil {
					b.Fatal(err)
				}
			}
			// Peer: hls.Run on the same words, alternated with the emulated
			// run so that load from other processes hits both alike.
			words := words(chunk.(*emuBO), g.chunkSize/4)
			out := make([]int32, len(ts)*fanout)
			var emu, direct time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := run.Start(); err != nil {
					b.Fatal(err)
				}
				if _, err := run.Wait(0); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := hls.Run(words, ts, out, fanout, key, false); err != nil {
					b.Fatal(err)
				}
				emu, direct = emu+t1.Sub(t0), direct+time.Since(t1)
			}
			b.ReportMetric(float64(emu.Nanoseconds())/float64(b.N), "emulated-ns/run")
			b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/run")
			b.ReportMetric(float64(emu)/float64(direct), "x-direct")
		})
	}
}

// BenchmarkSync measures Sync of a 64 MiB normal buffer (a host memcpy in
// the emulator) against copy() between two Go slices of the same size.
func BenchmarkSync(b *testing.B) {
	const size = 64 << 20
	dev, _ := openEmu(b, EmulatorConfig{})
	bo := must[BO](b)(dev.AllocBO(size, BONormal, 0))
	src, dst := make([]byte, size), make([]byte, size)
	copy(dst, src) // fault the pages in, as the BO's are after the first Sync
	var sync, cp time.Duration
	b.SetBytes(size)
	for b.Loop() {
		t0 := time.Now()
		if err := bo.Sync(ToDevice, size, 0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		copy(dst, src)
		sync, cp = sync+t1.Sub(t0), cp+time.Since(t1)
	}
	b.ReportMetric(float64(sync)/float64(cp), "x-copy")
}

// BenchmarkReadP2P reads a 64 MiB chunk file with O_DIRECT into a P2P
// buffer, against a buffered ReadAt of the same (page-cached) file into a
// Go slice: the ratio is what bypassing the page cache costs when the data
// is cached, i.e. an upper bound; on a cold SSD both read at device speed.
func BenchmarkReadP2P(b *testing.B) {
	const size = 64 << 20
	path := b.TempDir() + "/c"
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		b.Fatal(err)
	}
	f, direct := openDirect(b, path)
	defer f.Close()
	plain, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	dev, _ := openEmu(b, EmulatorConfig{})
	bo := must[BO](b)(dev.AllocBO(size, BOP2P, 0))
	buf := make([]byte, size)
	var p2p, buffered time.Duration
	b.SetBytes(size)
	for b.Loop() {
		t0 := time.Now()
		if err := ReadP2P(f, bo, 0, 0, size); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := plain.ReadAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		p2p, buffered = p2p+t1.Sub(t0), buffered+time.Since(t1)
	}
	b.ReportMetric(float64(size)*float64(b.N)/p2p.Seconds()/1e6, "p2p-MB/s")
	b.ReportMetric(float64(p2p)/float64(buffered), "x-buffered")
	if !direct {
		b.Log("O_DIRECT refused by the file system; buffered reads")
	}
}
