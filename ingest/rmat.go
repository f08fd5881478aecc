package ingest

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// RMATOptions parameterises the R-MAT generator. The defaults (zero A, B,
// C) are Graph500's: a = 0.57, b = 0.19, c = 0.19, d = 0.05.
type RMATOptions struct {
	Scale      int     // 2^Scale nodes, 1 ≤ Scale ≤ 30
	EdgeFactor int     // EdgeFactor · 2^Scale edges
	Seed       uint64  // the output is a pure function of the options
	A, B, C    float64 // quadrant probabilities; D = 1 - A - B - C
	// NoScramble keeps R-MAT's raw ids, where low ids are the hubs.
	// By default ids go through a seeded bijection of [0, 2^Scale), as
	// in Graph500, so that hubs spread over the id range (and chunks).
	NoScramble bool
}

// rmatBlock is the number of edges generated from one PCG stream; blocks
// are independent, so any number of workers yields the same output.
const rmatBlock = 1 << 16

func (o *RMATOptions) normalize() error {
	if o.Scale < 1 || o.Scale > 30 {
		return fmt.Errorf("rmat: scale %d: want 1..30 (at most 2^30 nodes: ids must stay below %d)", o.Scale, chunkfmt.MaxNodes)
	}
	if o.EdgeFactor < 1 {
		return fmt.Errorf("rmat: edge factor %d: want at least 1", o.EdgeFactor)
	}
	if o.A == 0 && o.B == 0 && o.C == 0 {
		o.A, o.B, o.C = 0.57, 0.19, 0.19
	}
	if o.A < 0 || o.B < 0 || o.C < 0 || o.A+o.B+o.C > 1 {
		return fmt.Errorf("rmat: probabilities a=%g b=%g c=%g: want non-negative with a+b+c ≤ 1", o.A, o.B, o.C)
	}
	return nil
}

// NumEdges is EdgeFactor · 2^Scale.
func (o RMATOptions) NumEdges() int64 { return int64(o.EdgeFactor) << o.Scale }

// rmatGen generates blocks of edges.
type rmatGen struct {
	o             RMATOptions
	ta, tab, tabc uint64 // cumulative thresholds in 16-bit fixed point
	mask          uint64
	m1, m2        uint64 // odd multipliers of the scrambling bijection
	add           uint64 // and its offset, so that 0 (the top hub) moves too
}

func newRMATGen(o RMATOptions) *rmatGen {
	g := &rmatGen{o: o, mask: 1<<o.Scale - 1}
	g.ta = uint64(o.A * 65536)
	g.tab = uint64((o.A + o.B) * 65536)
	g.tabc = uint64((o.A + o.B + o.C) * 65536)
	s := rand.New(rand.NewPCG(o.Seed, 0x5c4a3b1e))
	g.m1, g.m2, g.add = s.Uint64()|1, s.Uint64()|1, s.Uint64()
	return g
}

// scramble is a bijection of [0, 2^Scale): an offset, odd
// multiplications and xor-shifts, each invertible modulo 2^Scale.
func (g *rmatGen) scramble(x uint64) uint64 {
	h := uint(g.o.Scale/2 + 1)
	x = ((x + g.add) * g.m1) & g.mask
	x ^= x >> h
	x = (x * g.m2) & g.mask
	x ^= x >> h
	return x
}

// block fills pairs with the edges of block b.
func (g *rmatGen) block(b int64, pairs []uint32) []uint32 {
	total := g.o.NumEdges()
	n := min(int64(rmatBlock), total-b*rmatBlock)
	pairs = pairs[:2*n]
	r := rand.NewPCG(g.o.Seed, uint64(b))
	scale := g.o.Scale
	for e := range n {
		var u, v uint64
		var bits uint64
		left := 0
		for range scale {
			if left == 0 {
				bits, left = r.Uint64(), 4
			}
			x := bits & 0xffff
			bits >>= 16
			left--
			// Branch-free quadrant choice (the branches would be
			// unpredictable): u's bit is [x ≥ a+b]; v's bit is
			// [x ≥ a] ^ [x ≥ a+b] ^ [x ≥ a+b+c].
			geAB := (g.tab - 1 - x) >> 63
			u = u<<1 | geAB
			v = v<<1 | ((g.ta-1-x)>>63 ^ geAB ^ (g.tabc-1-x)>>63)
		}
		if !g.o.NoScramble {
			u, v = g.scramble(u), g.scramble(v)
		}
		pairs[2*e] = uint32(u)
		pairs[2*e+1] = uint32(v)
	}
	return pairs
}

// GenerateRMAT writes an R-MAT graph to w as text ("u\tv\n" lines), bin32
// or bin64. Blocks of edges are generated and encoded in parallel and
// written in order; the bytes depend only on o and format.
func GenerateRMAT(ctx context.Context, w io.Writer, o RMATOptions, format Format) error {
	if err := o.normalize(); err != nil {
		return err
	}
	switch format {
	case FormatText, FormatBin32, FormatBin64:
	default:
		return fmt.Errorf("rmat: format %v: want text, bin32 or bin64", format)
	}
	g := newRMATGen(o)
	nblocks := (o.NumEdges() + rmatBlock - 1) / rmatBlock
	workers := max(1, runtime.GOMAXPROCS(0))
	type job struct {
		b    int64
		out  []byte
		done chan struct{}
	}
	order := make(chan *job, 2*workers)
	jobs := make(chan *job, 2*workers)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(jobs)
		for b := range nblocks {
			j := &job{b: b, done: make(chan struct{})}
			select {
			case order <- j:
			case <-quit:
				return
			}
			jobs <- j
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			pairs := make([]uint32, 2*rmatBlock)
			for j := range jobs {
				p := g.block(j.b, pairs)
				j.out = encodePairs(p, format, make([]byte, 0, 24*rmatBlock))
				close(j.done)
			}
		}()
	}
	defer func() {
		close(quit)
		for range order {
		}
		wg.Wait()
	}()
	for j := range order {
		<-j.done
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := w.Write(j.out); err != nil {
			return fmt.Errorf("rmat: %w", err)
		}
	}
	return nil
}

func encodePairs(p []uint32, format Format, buf []byte) []byte {
	switch format {
	case FormatBin32:
		for _, x := range p {
			buf = binary.LittleEndian.AppendUint32(buf, x)
		}
	case FormatBin64:
		for _, x := range p {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(x))
		}
	default:
		for k := 0; k+1 < len(p); k += 2 {
			buf = strconv.AppendUint(buf, uint64(p[k]), 10)
			buf = append(buf, '\t')
			buf = strconv.AppendUint(buf, uint64(p[k+1]), 10)
			buf = append(buf, '\n')
		}
	}
	return buf
}

// WriteRMATFile generates an R-MAT graph into path atomically: into a
// temporary file beside it, synced, then renamed. On any failure or
// cancellation the temporary file is removed and path is untouched.
func WriteRMATFile(ctx context.Context, path string, o RMATOptions, format Format) error {
	if format == FormatAuto {
		format = formatByName(path)
		if format == FormatAuto {
			format = FormatText
		}
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("rmat: %w", err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 4<<20)
	if err := GenerateRMAT(ctx, bw, o, format); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("rmat: writing %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("rmat: %w", err)
	}
	return nil
}
