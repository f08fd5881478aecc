// The chunk stream: an epoch's layers (and the walker's passes) as jobs of
// one chunk each, read in order and double-buffered into the lanes, one
// lane per device.

package host

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/hls"
)

// lane is one device's share of the chunk stream. It owns two chunk
// buffers (slots 0 and 1) so that the next chunk is read while the current
// one is being sampled, and one targets/results buffer pair sized for
// maxTargets targets at the largest fanout.
//
// load and run for different slots may be called concurrently (one reader
// goroutine, one kernel goroutine per lane); each is called by one goroutine
// at a time.
type lane interface {
	name() string
	maxTargets() int
	// load reads chunk c into slot; it returns the bytes transferred.
	load(slot, c int) (int64, error)
	// resident is the chunk whose bytes slot holds (-1: none), from the
	// last successful load; it survives layers and epochs, so a chunk
	// still in a buffer is not read again.
	resident(slot int) int
	// takeOpenRead returns, once, the bytes read into slot when the
	// backend was opened (the O_DIRECT probe read of chunk 0), which no
	// layer has counted yet; 0 otherwise.
	takeOpenRead(slot int) int64
	// run launches the kernel once over the chunk in slot (launch).
	run(slot int, l launch) (kernel, sync time.Duration, err error)
	// runEntry launches the kernel once over the chunk cache's entry e
	// (its chunk, in host memory), for lanes whose device can read host
	// memory (stream.cache; the emulated SmartSSD).
	runEntry(e *cacheEntry, l launch) (kernel, sync time.Duration, err error)
}

// launch is one kernel launch over the chunk in a slot. In sampling mode
// (Walks nil) it samples Fanout neighbors of each target into Out
// (len(Targets)*Fanout entries); in walk mode it draws Fanout candidates
// for each walker standing on a target (its walk id in Walks, attempts
// Attempt0 on; rng.Candidate, hls.RunWalk). Either way, when Edges is not
// nil (as long as Out) each slot's chunk-local edge index goes there too.
//
// A copy-all launch (All not nil; Fanout epoch.AllNeighbors) runs the
// kernel's copy-all mode (hls.RunAllRaw): every neighbor of each target,
// from position Skip on for Targets[0], as many as the lane's result
// buffer holds; the lane leaves the output and where the launch stopped
// in *All (Out and Edges are not used), with edge indices when
// AllEdges.
type launch struct {
	Targets    []uint32
	Walks      []uint32
	Out, Edges []int32
	Fanout     int
	Key        uint64
	Replace    bool
	Attempt0   uint32
	All        *allOut
	Skip       uint32
	AllEdges   bool
}

// allOut is what a copy-all launch leaves: where it stopped (relative to
// its Targets), each target's count (up to and including the stop
// target), and its neighbors and their chunk-local edge indices, Words of
// each. The slices are the lane's to fill, reused from launch to launch.
type allOut struct {
	Progress hls.AllProgress
	Counts   []int32
	Samples  []int32
	Edges    []int32
}

// chunkIndex partitions a sorted frontier by chunk (chunkfmt.Index).
type chunkIndex interface {
	NumChunks() int
	NumNodes() uint32
	ByChunk(sortedFrontier []uint32) [][]uint32
}

// chunkJob is one chunk's contiguous slice of the frontier.
type chunkJob struct {
	chunk   int
	lo      int // position of targets[0] in the frontier
	seq     int // the job's place in the pass (chunkJobs' order)
	targets []uint32
}

// chunkJobs splits sorted targets (repeats allowed) by chunk: a job for
// each chunk that holds some, the others counted in ls.ChunksSkipped.
// Seeds, samples and walk starts are range-checked, so a target no chunk
// holds (beyond the graph's nodes) is a defence, not an expected error.
func chunkJobs(ix chunkIndex, targets []uint32, ls *LayerStats) ([]chunkJob, error) {
	parts := ix.ByChunk(targets)
	jobs := make([]chunkJob, 0, len(parts))
	lo := 0
	for c, p := range parts {
		if len(p) == 0 {
			ls.ChunksSkipped++
			continue
		}
		jobs = append(jobs, chunkJob{chunk: c, lo: lo, seq: len(jobs), targets: p})
		lo += len(p)
	}
	if lo != len(targets) {
		// targets is sorted: targets[lo] is the first node no chunk holds.
		return nil, fmt.Errorf("node %d is not below the graph's %d nodes: no chunk holds it", targets[lo], ix.NumNodes())
	}
	return jobs, nil
}

// runLayer runs one layer's pass over jobs: all through the lanes, or,
// with a random-read side, split between the lanes and random reads by
// its cost model (runSplit).
func (s stream) runLayer(ctx context.Context, l, k int, jobs []chunkJob, pass streamPass, ls *LayerStats, hook func(int, int64)) error {
	if s.side == nil {
		return s.run(ctx, jobs, pass, ls, hook)
	}
	ch, err := s.side.split(ctx, l, jobs, k, s)
	if err != nil {
		return err
	}
	err = s.runSplit(ctx, l, k, ch, pass, ls, hook)
	if err == nil {
		s.side.r.observeStream(ls, len(s.lanes))
	}
	return err
}

type loadedJob struct {
	chunkJob
	slot int
}

// sampleEpoch runs the layers of DESIGN §4 through the stream. With edgeBase
// (chunk c's first global edge, and its end at c+1: prefix sums of the
// manifest's NEdges; nil for no edge ids) every layer gets EdgeIDs.
func sampleEpoch(ctx context.Context, sm stream, ix chunkIndex, seeds []uint32, fanouts []int, key epoch.Key, st *Stats, onChunk func(layer, chunk int, bytes int64), edgeBase []int64) (*epoch.Result, error) {
	start := time.Now()
	frontier := sortedUnique(seeds)
	res := &epoch.Result{Key: key, Layers: make([]epoch.Layer, 0, len(fanouts))}
	st.Layers = st.Layers[:0]
	for l, k := range fanouts {
		ly, ls, err := sampleLayer(ctx, sm, ix, l, frontier, k, key.Layer(l), key.Replace, onChunk, edgeBase)
		if err != nil {
			return nil, err
		}
		res.Layers = append(res.Layers, ly)
		frontier = epoch.NextFrontier(frontier, ly.Samples)
		st.Layers = append(st.Layers, ls)
	}
	res.Final = frontier
	st.Wall = time.Since(start)
	return res, nil
}

// sampleLayer samples layer l of an epoch, fanout k (or every neighbor,
// epoch.AllNeighbors) of every node of frontier (sorted, unique) under
// the layer key lkey: the chunk jobs, each streamed through the lanes or
// random-read (stream.runLayer, §4d), the samples checked against the
// graph, edge ids with edgeBase. sampleEpoch's layers are these under
// key.Layer(l); a heterogeneous epoch's, under a relation's key
// (Sampler.SampleLayerKeyed).
func sampleLayer(ctx context.Context, sm stream, ix chunkIndex, l int, frontier []uint32, k int, lkey uint64, replace bool, onChunk func(layer, chunk int, bytes int64), edgeBase []int64) (epoch.Layer, LayerStats, error) {
	t0 := time.Now()
	ls := LayerStats{Layer: l, Fanout: k, Targets: len(frontier)}
	if err := ctx.Err(); err != nil {
		return epoch.Layer{}, ls, fmt.Errorf("layer %d: %w", l, err)
	}
	if k == epoch.AllNeighbors {
		ly, err := sampleAll(ctx, sm, ix, frontier, l, &ls, onChunk, edgeBase)
		if err != nil {
			return epoch.Layer{}, ls, err
		}
		ls.ResultBytes = layerBytes(&ly)
		ls.Wall = time.Since(t0)
		return ly, ls, nil
	}
	samples := make([]int32, len(frontier)*k)
	var edgeIDs []int64
	if edgeBase != nil {
		edgeIDs = make([]int64, len(samples))
	}
	jobs, err := chunkJobs(ix, frontier, &ls)
	if err != nil {
		return epoch.Layer{}, ls, fmt.Errorf("layer %d (hop %d): frontier %w", l, l+1, err)
	}
	var hook func(int, int64)
	if onChunk != nil {
		hook = func(c int, n int64) { onChunk(l, c, n) }
	}
	pass := streamPass{samples: samples, edgeIDs: edgeIDs, edgeBase: edgeBase, fanout: k, key: lkey, replace: replace}
	if err := sm.runLayer(ctx, l, k, jobs, pass, &ls, hook); err != nil {
		return epoch.Layer{}, ls, fmt.Errorf("layer %d: %w", l, err)
	}
	n, err := checkSamples(samples, frontier, k, jobs, ix.NumNodes())
	if err != nil {
		return epoch.Layer{}, ls, fmt.Errorf("layer %d (hop %d): %w", l, l+1, err)
	}
	ls.SampledSlots = n
	ly := epoch.Layer{Frontier: frontier, Fanout: k, Samples: samples, EdgeIDs: edgeIDs}
	ls.ResultBytes = layerBytes(&ly)
	ls.Wall = time.Since(t0)
	return ly, ls, nil
}

// ErrBadSample is wrapped by the error for a sample that is not a node of
// the graph: a device returned an id at or beyond num_nodes (or a negative
// value other than the empty slot -1), which only a corrupt chunk that
// passed unchecked (the XRT path without Options.VerifyReads) or a faulty
// device can produce. The epoch is refused rather than written with the
// edge dropped or the id kept.
var ErrBadSample = errors.New("host: sample is not a node of the graph")

// checkSamples checks every sample of a layer against the graph's node
// count and counts the non-empty ones. The error names the frontier node,
// its chunk, the slot and the value.
func checkSamples(samples []int32, frontier []uint32, k int, jobs []chunkJob, numNodes uint32) (int64, error) {
	var n int64
	for i, s := range samples {
		switch {
		case s >= 0 && uint32(s) < numNodes:
			n++
		case s == -1:
		default:
			row := i / k
			// The job whose frontier range holds row: the last with lo <= row.
			j := sort.Search(len(jobs), func(j int) bool { return jobs[j].lo > row }) - 1
			chunk := -1
			if j >= 0 {
				chunk = jobs[j].chunk
			}
			return 0, fmt.Errorf("%w: chunk %d, node %d, slot %d: sample %d (%#08x) is not below num_nodes %d",
				ErrBadSample, chunk, frontier[row], i%k, s, uint32(s), numNodes)
		}
	}
	return n, nil
}

// ErrBadEdge is wrapped by the error for an edge index a device returned
// that is not an edge of the chunk sampled, or that disagrees with its
// sample about the slot being empty (as ErrBadSample, only a corrupt
// chunk or a faulty device gives one).
var ErrBadEdge = errors.New("host: edge index is not an edge of the chunk")

// globalEdges turns a launch's chunk-local edge indices into global edge
// ids (base + index) in dst, checking each against the chunk's nEdges and
// its sample; the error names the target and slot.
func globalEdges(dst []int64, local, samples []int32, targets []uint32, fanout int, chunk int, base, nEdges int64) error {
	for i, e := range local {
		switch {
		case e >= 0 && int64(e) < nEdges && samples[i] != -1:
			dst[i] = base + int64(e)
		case e == -1 && samples[i] == -1:
			dst[i] = -1
		default:
			return fmt.Errorf("%w: chunk %d, node %d, slot %d: edge index %d for sample %d, want -1 exactly at an empty slot and below the chunk's %d edges elsewhere",
				ErrBadEdge, chunk, targets[i/fanout], i%fanout, e, samples[i], nEdges)
		}
	}
	return nil
}

// streamPass is what one pass over the chunks computes: the kernel's
// parameters and where its output lands. samples (and edgeIDs, with
// edgeBase) are indexed like the pass's sorted target list; walks, in
// walk mode, is each target's walk id.
type streamPass struct {
	samples  []int32
	edgeIDs  []int64
	edgeBase []int64
	fanout   int
	key      uint64
	replace  bool
	walks    []uint32
	attempt0 uint32
	// all collects a full layer's rows (fanout epoch.AllNeighbors): the
	// launches run the kernel's copy-all mode, and samples, edgeIDs and
	// fanout are not used.
	all *allRows
}

// runLayer streams jobs through every lane concurrently: a shared work
// queue (which hands a lane the chunk already in its free buffer first, so
// the chunks left in the buffers by the previous layer are not read again)
// feeds, per lane, a reader goroutine (chunk → free slot) and a
// kernel goroutine (launches over the loaded slot, then frees it), so a
// lane's next read overlaps its current kernel and readback. Each job
// writes its own contiguous range of samples, so results land in frontier
// order without a merge step; with edgeIDs (and edgeBase, see
// sampleEpoch) each launch's chunk-local edge indices land in the same
// range of edgeIDs as global ids. The first error cancels the layer; all
// goroutines have exited when runLayer returns.
func runLayer(ctx context.Context, lanes []lane, jobs []chunkJob, pass streamPass, ls *LayerStats, onChunk func(chunk int, bytes int64)) error {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	queue := newDispatcher(jobs)

	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	merge := func(f func()) { mu.Lock(); f(); mu.Unlock() }
	for _, ln := range lanes {
		free := make(chan int, 2)
		free <- 0
		free <- 1
		loaded := make(chan loadedJob, 2)
		wg.Add(2)
		go func() { // reader
			defer wg.Done()
			defer close(loaded)
			var chunks, reused int
			var bytes int64
			var readTime time.Duration
			defer func() {
				merge(func() {
					ls.ChunksRead += chunks
					ls.ChunksReused += reused
					ls.BytesRead += bytes
					ls.ReadTime += readTime
				})
			}()
			for {
				var slot int
				select {
				case <-lctx.Done():
					return
				case slot = <-free:
				}
				if lctx.Err() != nil {
					return
				}
				j, reuse, ok := queue.claim(ln.resident(slot))
				if !ok {
					return
				}
				// Bytes read into this buffer at open are counted by the
				// first layer that uses the buffer: as the read of the
				// chunk it reuses, or with the read that replaces it.
				opened := ln.takeOpenRead(slot)
				switch {
				case reuse && opened > 0:
					chunks++
					bytes += opened
					if onChunk != nil {
						onChunk(j.chunk, opened)
					}
				case reuse:
					reused++
				default:
					t := time.Now()
					n, err := ln.load(slot, j.chunk)
					readTime += time.Since(t)
					if err != nil {
						cancel(fmt.Errorf("%s: chunk %d: read: %w", ln.name(), j.chunk, err))
						return
					}
					chunks++
					bytes += n + opened
					if onChunk != nil {
						onChunk(j.chunk, n+opened)
					}
				}
				select {
				case loaded <- loadedJob{j, slot}:
				case <-lctx.Done():
					return
				}
			}
		}()
		go func() { // kernel
			defer wg.Done()
			var launches int
			var kernel, syncT time.Duration
			defer func() {
				merge(func() { ls.Launches += launches; ls.KernelTime += kernel; ls.SyncTime += syncT })
			}()
			local := pass.localEdges(ln)
			for lj := range loaded {
				n, kt, stt, err := pass.runJob(lctx, ln, lj.chunkJob, local, func(la launch) (time.Duration, time.Duration, error) { return ln.run(lj.slot, la) })
				launches, kernel, syncT = launches+n, kernel+kt, syncT+stt
				if err != nil {
					cancel(err)
				}
				free <- lj.slot // capacity 2: never blocks
			}
		}()
	}
	wg.Wait()
	return context.Cause(lctx)
}

// localEdges is a kernel goroutine's buffer for one launch's chunk-local
// edge indices (nil without edge ids, and in a full layer, whose launches
// leave them in the lane's allOut).
func (p streamPass) localEdges(ln lane) []int32 {
	if p.edgeIDs == nil || p.all != nil {
		return nil
	}
	return make([]int32, ln.maxTargets()*p.fanout)
}

// runJob samples job j's targets in launches of at most ln.maxTargets()
// through run (one launch over the chunk wherever it is), each launch's
// results landing in the job's range of the pass's samples (and, with edge
// ids, local's indices as global ids in edgeIDs). It stops at the first
// error, which names the lane, the chunk and the launch's targets, or
// when ctx ends.
func (p streamPass) runJob(ctx context.Context, ln lane, j chunkJob, local []int32, run func(launch) (time.Duration, time.Duration, error)) (launches int, kernel, syncT time.Duration, err error) {
	if p.all != nil {
		return p.runJobAll(ctx, ln, j, run)
	}
	mt, fanout := ln.maxTargets(), p.fanout
	for off := 0; off < len(j.targets) && ctx.Err() == nil; off += mt {
		end := min(off+mt, len(j.targets))
		pos := j.lo + off
		out := p.samples[pos*fanout : (j.lo+end)*fanout]
		var el []int32
		if local != nil {
			el = local[:len(out)]
		}
		la := launch{Targets: j.targets[off:end], Out: out, Edges: el, Fanout: fanout, Key: p.key, Replace: p.replace}
		if p.walks != nil {
			la.Walks, la.Attempt0 = p.walks[pos:j.lo+end], p.attempt0
		}
		kt, stt, err := run(la)
		kernel += kt
		syncT += stt
		launches++
		if err == nil && el != nil {
			err = globalEdges(p.edgeIDs[pos*fanout:(j.lo+end)*fanout], el, out, j.targets[off:end], fanout,
				j.chunk, p.edgeBase[j.chunk], p.edgeBase[j.chunk+1]-p.edgeBase[j.chunk])
		}
		if err != nil {
			return launches, kernel, syncT, fmt.Errorf("%s: chunk %d (targets %d..%d): %w", ln.name(), j.chunk, off, end, err)
		}
	}
	return launches, kernel, syncT, nil
}

// dispatcher is the layer's work queue. Jobs go out in chunk order, except
// that a reader with a free buffer still holding a chunk that has a job
// gets that job first, without reading it again.
type dispatcher struct {
	mu      sync.Mutex
	jobs    []chunkJob
	byChunk map[int]int
	taken   []bool
	next    int
}

func newDispatcher(jobs []chunkJob) *dispatcher {
	d := &dispatcher{jobs: jobs, byChunk: make(map[int]int, len(jobs)), taken: make([]bool, len(jobs))}
	for i, j := range jobs {
		d.byChunk[j.chunk] = i
	}
	return d
}

// claim returns the job for chunk resident if it is still unclaimed
// (reuse), else the next unclaimed job; ok is false when none is left.
func (d *dispatcher) claim(resident int) (j chunkJob, reuse, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, found := d.byChunk[resident]; found && resident >= 0 && !d.taken[i] {
		d.taken[i] = true
		return d.jobs[i], true, true
	}
	for d.next < len(d.jobs) && d.taken[d.next] {
		d.next++
	}
	if d.next == len(d.jobs) {
		return chunkJob{}, false, false
	}
	d.taken[d.next] = true
	d.next++
	return d.jobs[d.next-1], false, true
}
