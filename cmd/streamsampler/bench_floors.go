package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/hls"
)

// seqReadRate reads up to limit bytes of path sequentially with O_DIRECT
// (buffered if the filesystem refuses it) in 8 MiB requests and returns
// the rate in bytes/s: the I/O floor the streaming sampler is held to.
func seqReadRate(path string, limit int64) (rate float64, direct bool, err error) {
	const req = 8 << 20
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	direct = err == nil
	if err != nil {
		if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return 0, false, fmt.Errorf("open %s: %w", path, err)
		}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, req, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return 0, direct, err
	}
	defer unix.Munmap(buf)
	var off int64
	start := time.Now()
	for off < limit {
		n, err := unix.Pread(fd, buf, off)
		if err != nil {
			if direct && off == 0 {
				// Accepted at open, refused at read: measure buffered.
				f.Close()
				return seqReadRateBuffered(path, limit, buf)
			}
			return 0, direct, fmt.Errorf("read %s at %d: %w", path, off, err)
		}
		if n == 0 {
			break
		}
		off += int64(n)
	}
	el := time.Since(start).Seconds()
	if el <= 0 || off == 0 {
		return 0, direct, fmt.Errorf("read %s: nothing read", path)
	}
	return float64(off) / el, direct, nil
}

func seqReadRateBuffered(path string, limit int64, buf []byte) (float64, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var off int64
	start := time.Now()
	for off < limit {
		n, err := f.ReadAt(buf, off)
		off += int64(n)
		if err != nil {
			break
		}
	}
	return float64(off) / time.Since(start).Seconds(), false, nil
}

// gatherFloor times the minimum memory work of sampling k neighbors of
// every target, with the chunks already in memory: per target, read its two
// offsets and k adjacency words at random positions (a xorshift, no Floyd,
// no output). Targets are split over workers goroutines, as the sampler
// spreads chunks over devices. It returns the elapsed time.
func gatherFloor(g *chunkfmt.Graph, targets []uint32, k, workers int) (time.Duration, uint64) {
	workers = max(1, min(workers, runtime.GOMAXPROCS(0)))
	parts := g.Index.Split(targets)
	type piece struct {
		words   []uint32
		start   uint32
		targets []uint32
	}
	var pieces []piece
	for c, p := range parts {
		if len(p) == 0 {
			continue
		}
		w, err := g.Reader.ChunkWords(c)
		if err != nil {
			continue
		}
		pieces = append(pieces, piece{w, g.Index.Start(c), p})
	}
	var wg sync.WaitGroup
	sums := make([]uint64, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			x := uint64(0x9E3779B97F4A7C15) + uint64(w)
			var sum uint64
			for i := w; i < len(pieces); i += workers {
				p := pieces[i]
				for _, v := range p.targets {
					j := v - p.start
					o0, o1 := p.words[2+j], p.words[3+j]
					d := uint64(o1 - o0)
					if d == 0 {
						continue
					}
					for t := 0; t < k; t++ {
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
						sum += uint64(p.words[uint64(o0)+(x>>32)*d>>32])
					}
				}
			}
			sums[w] = sum
		}(w)
	}
	wg.Wait()
	var s uint64
	for _, v := range sums {
		s += v
	}
	return time.Since(start), s
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, and
// resetPeakRSS restarts that peak at the current RSS (Linux ≥ 4.0).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb int64
	for _, line := range splitLines(string(b)) {
		if n, _ := fmt.Sscanf(line, "VmHWM: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}

func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// kernelFloor times the sampling kernel itself (hls.Run, the code the
// emulated device executes) over every target with the chunks already in
// memory and no device, buffers or I/O, split over workers goroutines. The
// epoch's wall time over this floor is the cost of streaming: reads,
// transfers, scheduling and merging.
func kernelFloor(g *chunkfmt.Graph, targets []uint32, k int, key uint64, replace bool, workers int) (time.Duration, error) {
	workers = max(1, min(workers, runtime.GOMAXPROCS(0)))
	parts := g.Index.Split(targets)
	out := make([]int32, len(targets)*k)
	type piece struct {
		words   []uint32
		targets []uint32
		out     []int32
	}
	var pieces []piece
	pos := 0
	for c, p := range parts {
		if len(p) == 0 {
			continue
		}
		w, err := g.Reader.ChunkWords(c)
		if err != nil {
			return 0, err
		}
		pieces = append(pieces, piece{w, p, out[pos*k : (pos+len(p))*k]})
		pos += len(p)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(pieces); i += workers {
				p := pieces[i]
				if err := hls.Run(p.words, p.targets, p.out, k, key, replace); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// threadCPU is the calling OS thread's CPU time (user + system) in
// seconds; the caller locks itself to its thread.
func threadCPU() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
