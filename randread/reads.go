package randread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/internal/aio"
	"github.com/streamsampler/streamsampler/rng"
	"github.com/streamsampler/streamsampler/xrt"
)

// request is one Sample call's state: the blocks read so far, which later
// layers reuse (their frontiers contain the earlier ones).
type request struct {
	s      *Sampler
	aio    *aio.Context // nil: a pool of pread goroutines
	blocks map[int64][]byte
	stats  *Stats
	bos    []xrt.BO // the SmartSSD path's device buffers, freed with the request
	want   []int64  // scratch: the blocks a layer needs
	miss   []int64  // scratch: those not read yet
	runs   []run    // scratch: the layer's reads
}

// run is one read: the missing blocks [lo, hi), consecutive on disk.
type run struct{ lo, hi int }

// layer samples layer l of frontier (sorted unique) with fanout k: the
// positions of every node's sample (rng.Positions), the distinct blocks
// their words lie in, the reads of those not read yet, then the words.
//
// With k epoch.AllNeighbors (DESIGN §3 "Full neighborhoods") the layer
// is a CSR (epoch.Layer.Offsets): every node's positions are 0..d−1, no
// draw, and its blocks are the run of blocks its whole row spans, read
// MaxRun bytes at a time like any run: nothing is sized by a fanout, so
// a hub of 10⁶ neighbors costs its row's blocks and 4 bytes a neighbor.
func (rq *request) layer(ctx context.Context, l int, frontier []uint32, k int, key epoch.Key, edgeIDs bool) (epoch.Layer, LayerStats, error) {
	s := rq.s
	lkey := key.Layer(l)
	bs := int64(s.o.BlockSize)
	indptr, base := s.off.indptr, s.off.base
	full := k == epoch.AllNeighbors
	var offs []int64 // row i of samples is [offs[i], offs[i+1]) (full layers)
	n := int64(len(frontier)) * int64(k)
	if full {
		offs = make([]int64, len(frontier)+1)
		for i, v := range frontier {
			offs[i+1] = offs[i] + int64(indptr[v+1]-indptr[v])
		}
		n = offs[len(frontier)]
	}
	span := func(i int) (int64, int64) {
		if full {
			return offs[i], offs[i+1]
		}
		return int64(i) * int64(k), int64(i+1) * int64(k)
	}
	samples := make([]int32, n)
	var eids []int64
	if edgeIDs {
		eids = make([]int64, len(samples))
	}
	ls := LayerStats{Nodes: len(frontier)}

	// Positions, edge ids and the blocks they need. The frontier is
	// sorted, so its nodes' chunks are found by walking the chunks along,
	// and its nodes' adjacencies lie in increasing order in the file: a
	// node's blocks, sorted, all come at or after the previous node's, so
	// want is built sorted and unique without sorting it whole.
	want := rq.want[:0]
	var nodeBlocks [hls.MaxFanout]int64
	c := 0
	for i, v := range frontier {
		for s.ix.End(c) <= v {
			c++
		}
		first := indptr[v]
		d := int(indptr[v+1] - first)
		lo, hi := span(i)
		row := samples[lo:hi]
		if full {
			for t := range row {
				row[t] = int32(t)
				if eids != nil {
					eids[lo+int64(t)] = int64(first) + int64(t)
				}
			}
			ls.Slots += int64(d)
			if d > 0 {
				at := base[c] + 4*int64(first)
				for b := max(at/bs, lastOf(want)+1); b <= (at+4*int64(d)-1)/bs; b++ {
					want = append(want, b)
				}
			}
			continue
		}
		rng.Positions(row, d, v, lkey, key.Replace)
		nb := nodeBlocks[:0]
		for t, p := range row {
			if p < 0 {
				if eids != nil {
					eids[lo+int64(t)] = -1
				}
				continue
			}
			e := first + uint64(p)
			if eids != nil {
				eids[lo+int64(t)] = int64(e)
			}
			nb = append(nb, (base[c]+4*int64(e))/bs)
		}
		ls.Slots += int64(len(nb))
		slices.Sort(nb)
		for _, b := range nb {
			if n := len(want); n == 0 || b > want[n-1] {
				want = append(want, b)
			}
		}
	}
	ls.Blocks = int64(len(want))
	missing := rq.miss[:0]
	for _, b := range want {
		if _, ok := rq.blocks[b]; !ok {
			missing = append(missing, b)
		}
	}
	ls.Reused = ls.Blocks - int64(len(missing))
	rq.want, rq.miss = want, missing

	// The reads: runs of consecutive missing blocks, up to MaxRun bytes.
	runs := rq.runs[:0]
	maxBlocks := s.o.MaxRun / s.o.BlockSize
	for i := 0; i < len(missing); {
		j := i + 1
		for j < len(missing) && missing[j] == missing[j-1]+1 && j-i < maxBlocks {
			j++
		}
		runs = append(runs, run{i, j})
		i = j
	}
	rq.runs = runs

	// Where the blocks go: a host buffer of the missing ones, or, on the
	// SmartSSD path, a device buffer of all the layer's blocks in want's
	// order (the missing ones read into place, those of earlier layers
	// copied there, as a device-to-device copy would).
	var slab []byte
	var at func(i int) []byte // missing[i]'s bytes in slab
	var devBlocks xrt.BO
	if s.dev != nil && len(want) > 0 {
		bo, m, err := s.dev.deviceBlocks(len(want), bs)
		if err != nil {
			return epoch.Layer{}, ls, fmt.Errorf("randread: device buffer of %d blocks: %w", len(want), err)
		}
		rq.bos = append(rq.bos, bo)
		devBlocks, slab = bo, m
		j := 0
		idx := make([]int, len(missing))
		for i, b := range missing {
			for want[j] != b {
				j++
			}
			idx[i] = j
		}
		at = func(i int) []byte { return slab[int64(idx[i])*bs:] }
	} else {
		slab = aio.Aligned(int64(len(missing)) * bs)
		at = func(i int) []byte { return slab[int64(i)*bs:] }
	}
	t0 := time.Now()
	if err := rq.read(ctx, runs, missing, at); err != nil {
		return epoch.Layer{}, ls, err
	}
	ls.ReadTime = time.Since(t0)
	ls.Reads = int64(len(runs))
	ls.BytesRead = int64(len(missing)) * bs
	for i, b := range missing {
		rq.blocks[b] = at(i)[:bs:bs]
	}
	if devBlocks != nil {
		for j, b := range want {
			dst := slab[int64(j)*bs : int64(j+1)*bs : int64(j+1)*bs]
			if src := rq.blocks[b]; &src[0] != &dst[0] {
				copy(dst, src)
			}
			rq.blocks[b] = dst
		}
	}

	// The gather: each position's word, from its block.
	var err error
	if s.dev != nil {
		err = rq.gatherDevice(frontier, samples, span, want, devBlocks)
	} else {
		err = rq.gather(frontier, samples, span)
	}
	if err != nil {
		return epoch.Layer{}, ls, err
	}
	if rq.stats != nil {
		rq.stats.Layers = append(rq.stats.Layers, ls)
		rq.stats.ReadTime += ls.ReadTime
	}
	return epoch.Layer{Frontier: frontier, Fanout: k, Samples: samples, EdgeIDs: eids, Offsets: offs}, ls, nil
}

// lastOf is the last of want's blocks, -1 for none.
func lastOf(want []int64) int64 {
	if len(want) == 0 {
		return -1
	}
	return want[len(want)-1]
}

// gather replaces each valid position of samples (row i, frontier[i]'s,
// at span(i)) by its neighbor: the word at its byte, from the block read
// for it.
func (rq *request) gather(frontier []uint32, samples []int32, span func(int) (int64, int64)) error {
	s := rq.s
	bs := int64(s.o.BlockSize)
	indptr, base := s.off.indptr, s.off.base
	numNodes := s.m.NumNodes
	lastBlock, blk := int64(-1), []byte(nil)
	c := 0
	for i, v := range frontier {
		for s.ix.End(c) <= v {
			c++
		}
		first := indptr[v]
		lo, hi := span(i)
		row := samples[lo:hi]
		for t, p := range row {
			if p < 0 {
				continue
			}
			at := base[c] + 4*int64(first+uint64(p))
			if b := at / bs; b != lastBlock {
				lastBlock, blk = b, rq.blocks[b]
			}
			w := binary.LittleEndian.Uint32(blk[at%bs:])
			if w >= numNodes {
				return s.notANode(c, v, p, at, w)
			}
			row[t] = int32(w)
		}
	}
	return nil
}

// notANode is the error of a neighbor word w, at byte at of edges.chunks
// (position p of node v, in chunk c), that is not a node id.
func (s *Sampler) notANode(c int, v uint32, p int32, at int64, w uint32) error {
	ci := s.m.Chunks[c]
	word := (at - s.m.ChunkOffset(c)) / 4
	return fmt.Errorf("randread: %s: %w", s.path, &chunkfmt.DefectError{File: chunkfmt.ChunksFile, Chunk: c, Start: ci.Start, End: ci.End,
		Node: int64(v), Word: word, What: fmt.Sprintf("neighbor %d (position %d) at word %d is not a node: the graph has %d nodes", w, p, word, s.m.NumNodes)})
}

// read reads the runs of missing blocks into place (block i of missing at
// dst(i), where the blocks of a run follow each other), Depth at once:
// through the request's AIO context, or by Depth goroutines calling
// pread. A read may end short only at the
// end of the file (the last chunk is padded to 512 bytes, not to a
// block).
func (rq *request) read(ctx context.Context, runs []run, missing []int64, dst func(i int) []byte) error {
	if len(runs) == 0 {
		return nil
	}
	s := rq.s
	bs := int64(s.o.BlockSize)
	at := func(k int) int64 { return missing[runs[k].lo] * bs }
	buf := func(k int) []byte { return dst(runs[k].lo)[:int64(runs[k].hi-runs[k].lo)*bs] }
	check := func(k, got int, err error) error {
		off := at(k)
		want := min(int64(len(buf(k))), s.size-off)
		if int64(got) < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("randread: %s: read %d bytes at %d, want %d: %w", s.path, got, off, want, err)
		}
		return ctx.Err()
	}
	if rq.aio != nil {
		return rq.aio.Read(s.fd, len(runs), s.o.Depth,
			func(k, _ int) (int64, []byte) { return at(k), buf(k) },
			func(k, _ int, _ []byte, got int, err error) error { return check(k, got, err) })
	}
	depth := min(s.o.Depth, len(runs))
	errs := make([]error, depth)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(runs); k = int(next.Add(1) - 1) {
				got, err := s.f.ReadAt(buf(k), at(k))
				if err := check(k, got, err); err != nil {
					errs[w] = err
					next.Store(int64(len(runs))) // the others stop too
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ReadBlocks reads the given blocks of edges.chunks (block numbers in
// units of Options.BlockSize, below NumBlocks) as a layer reads its
// blocks: sorted, deduplicated, runs of consecutive ones as one read,
// Depth in flight, through the Sampler's I/O engine. It is the read path
// alone, for benchmarks that compare it with fio; the bytes are dropped
// (read into Depth buffers in turn, whatever the number of blocks).
func (s *Sampler) ReadBlocks(ctx context.Context, blocks []int64) (LayerStats, error) {
	if !s.enter() {
		return LayerStats{}, ErrClosed
	}
	defer s.busy.Done()
	a := s.aioContext()
	defer s.release(a)
	want := slices.Clone(blocks)
	slices.Sort(want)
	want = slices.Compact(want)
	nb := s.NumBlocks()
	for _, b := range want {
		if b < 0 || b >= nb {
			return LayerStats{}, fmt.Errorf("%w: block %d, the file has %d blocks of %d bytes", ErrInvalid, b, nb, s.o.BlockSize)
		}
	}
	rq := &request{s: s, aio: a}
	var runs []run
	maxBlocks := s.o.MaxRun / s.o.BlockSize
	for i := 0; i < len(want); {
		j := i + 1
		for j < len(want) && want[j] == want[j-1]+1 && j-i < maxBlocks {
			j++
		}
		runs = append(runs, run{i, j})
		i = j
	}
	// The bytes are dropped: Depth buffers of MaxRun bytes, run k into
	// buffer k mod Depth (a run still in flight when its buffer is
	// reused writes over another's bytes, which nobody reads).
	bs := int64(s.o.BlockSize)
	ring := aio.Aligned(int64(s.o.Depth) * int64(s.o.MaxRun))
	runOf := make(map[int]int, len(runs))
	for k, r := range runs {
		runOf[r.lo] = k
	}
	t0 := time.Now()
	err := rq.read(ctx, runs, want, func(i int) []byte { return ring[int64(runOf[i]%s.o.Depth)*int64(s.o.MaxRun):] })
	return LayerStats{Blocks: int64(len(want)), Reads: int64(len(runs)), BytesRead: int64(len(want)) * bs, ReadTime: time.Since(t0)}, err
}

// NumBlocks is the number of Options.BlockSize blocks of edges.chunks
// (the last one may be partial).
func (s *Sampler) NumBlocks() int64 {
	bs := int64(s.o.BlockSize)
	return (s.size + bs - 1) / bs
}
