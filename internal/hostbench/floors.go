package hostbench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/hls"
)

// seqReqBytes is the request size of the sequential read floor: large
// enough that the device, not the syscall rate, sets the pace.
const seqReqBytes = 8 << 20

// SeqReadRate reads up to limit bytes of path sequentially with O_DIRECT
// (buffered if the filesystem refuses it, direct = false) in 8 MiB
// requests and returns the rate in bytes/s: the I/O floor the streaming
// sampler is held to.
func SeqReadRate(path string, limit int64) (rate float64, direct bool, err error) {
	buf, free, err := alignedBuffer(seqReqBytes)
	if err != nil {
		return 0, false, err
	}
	defer free()
	f, err := openDirect(path)
	direct = err == nil
	if err != nil {
		if f, err = os.Open(path); err != nil {
			return 0, false, err
		}
	}
	defer f.Close()
	n, err := readSeq(f, buf, limit)
	if err != nil && direct && n.bytes == 0 {
		// Accepted at open, refused at read (some filesystems do): measure
		// buffered instead.
		f.Close()
		if f, err = os.Open(path); err != nil {
			return 0, false, err
		}
		defer f.Close()
		direct = false
		n, err = readSeq(f, buf, limit)
	}
	if err != nil {
		return 0, direct, err
	}
	if n.bytes == 0 || n.elapsed <= 0 {
		return 0, direct, fmt.Errorf("read %s: nothing read", path)
	}
	return float64(n.bytes) / n.elapsed.Seconds(), direct, nil
}

type readCount struct {
	bytes   int64
	elapsed time.Duration
}

// readSeq reads f from offset 0 in len(buf) requests until limit bytes,
// a short read (the end of the file) or an error.
func readSeq(f *os.File, buf []byte, limit int64) (readCount, error) {
	var off int64
	start := time.Now()
	for off < limit {
		n, err := f.ReadAt(buf, off)
		off += int64(n)
		if err != nil {
			// A short read is the end of the file. With O_DIRECT the read
			// after it may fail with EINVAL (an unaligned offset) instead
			// of io.EOF: that is the end too.
			if errors.Is(err, io.EOF) || n > 0 {
				break
			}
			return readCount{off, time.Since(start)}, fmt.Errorf("read %s at %d: %w", f.Name(), off, err)
		}
	}
	return readCount{off, time.Since(start)}, nil
}

// GatherFloor times the minimum memory work of sampling k neighbors of
// every target, with the chunks already in memory: per target, read its
// two offsets and k adjacency words at random positions (a xorshift, no
// Floyd, no output). Targets are split over workers goroutines, as the
// sampler spreads chunks over devices. It returns the elapsed time and a
// checksum of the words read (which keeps the reads from being optimised
// away).
func GatherFloor(g *chunkfmt.Graph, targets []uint32, k, workers int) (time.Duration, uint64, error) {
	workers = max(1, min(workers, runtime.GOMAXPROCS(0)))
	parts := g.Index.ByChunk(targets)
	type piece struct {
		chunk   chunkfmt.ChunkView
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
			return 0, 0, err
		}
		pieces = append(pieces, piece{chunkfmt.ChunkView(w), g.Index.Start(c), p})
	}
	var wg sync.WaitGroup
	sums := make([]uint64, workers)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			x := uint64(0x9E3779B97F4A7C15) + uint64(w)
			var sum uint64
			for i := w; i < len(pieces); i += workers {
				p := pieces[i]
				for _, v := range p.targets {
					o0, o1 := p.chunk.Span(v - p.start)
					d := uint64(o1 - o0)
					if d == 0 {
						continue
					}
					for range k {
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
						sum += uint64(p.chunk[uint64(o0)+(x>>32)*d>>32])
					}
				}
			}
			sums[w] = sum
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	var s uint64
	for _, v := range sums {
		s += v
	}
	return el, s, nil
}

// KernelFloor runs the sampling kernel itself (hls.Run, the code the
// emulated device executes) over every target with the chunks already in
// memory and no device, buffers or I/O, split over workers goroutines,
// and returns the elapsed time and the samples in target order (targets
// sorted, as a frontier is). An epoch's wall time over this floor is the
// cost of streaming: reads, transfers, scheduling and merging.
func KernelFloor(g *chunkfmt.Graph, targets []uint32, k int, key uint64, replace bool, workers int) (time.Duration, []int32, error) {
	workers = max(1, min(workers, runtime.GOMAXPROCS(0)))
	parts := g.Index.ByChunk(targets)
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
			return 0, nil, err
		}
		pieces = append(pieces, piece{w, p, out[pos*k : (pos+len(p))*k]})
		pos += len(p)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(pieces); i += workers {
				p := pieces[i]
				if err := hls.Run(p.words, p.targets, p.out, k, key, replace); err != nil {
					errs[w] = fmt.Errorf("kernel floor: %w", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return time.Since(start), out, errors.Join(errs...)
}
