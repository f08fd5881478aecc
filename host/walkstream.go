package host

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/internal/radix"
	"github.com/streamsampler/streamsampler/rng"
	"github.com/streamsampler/streamsampler/walk"
)

var _ walk.Walker = (*Sampler)(nil)

// WalksInto runs the random walks of c from every start (DESIGN §3,
// "Walks"; walk.Walker) by streaming the graph's chunks through the
// devices, as SampleEpoch does for neighbor sampling: a walk step is a
// pass whose targets are the walkers' current nodes, grouped by chunk
// (transit-parallel: a chunk is read once per pass for every walker
// standing in it), each chunk read in order and double-buffered. It
// writes W = walk.NumWalks(len(starts), c) rows of Length+1 nodes into
// out (c.OutputLen(len(starts)) entries, e.g. the data of a
// memory-mapped .npy), row-major, -1 after a walk ends: exactly
// walk.Reference's (the devices compute the candidates, rng.Candidate;
// the host the decisions, rng.Decide). The walker holds per walk only its
// current and previous node; the output is written a group of steps at a
// time (walkStageSteps).
//
// Passes per step: deepwalk and PPR one (one candidate per walker).
// node2vec from step 2 draws walk2vecBlock candidates per walker per pass
// and settles each in order: a candidate whose decision its draw alone
// settles needs nothing more; the others need "is the candidate in the
// previous node's adjacency", answered by a membership pass over the
// chunks that hold the previous nodes (read on the host by the lanes'
// reader, readHost). A step takes as many rounds of these as its slowest
// walker needs (usually one or two). The statistics have one entry per
// pass. A bad request is an error wrapping both ErrInvalid and
// walk.ErrInvalid; walks do not change LastStats (an epoch's).
func (s *Sampler) WalksInto(ctx context.Context, starts []uint32, c walk.Config, out []int32) (*walk.Stats, error) {
	if err := c.CheckOutput(starts, s.manifest.NumNodes, out); err != nil {
		return nil, fmt.Errorf("%w: walks: %w", ErrInvalid, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return nil, fmt.Errorf("host: sampler is closed")
	}
	st := &walk.Stats{Engine: s.backend, Devices: len(s.lanes)}
	w := &streamWalker{s: s, st: st, c: c, starts: starts}
	if err := w.walk(ctx, out); err != nil {
		return nil, fmt.Errorf("host: walks: %w", err)
	}
	return st, nil
}

// walk2vecBlock is how many node2vec candidates a pass draws per walker:
// most walkers accept one of the first few, and a pass costs a read of
// the chunks whatever its k.
const walk2vecBlock = 8

// streamWalker is one WalksInto call.
type streamWalker struct {
	s      *Sampler
	st     *walk.Stats
	c      walk.Config
	starts []uint32
	stream stream
	// The step being taken.
	step uint32
	key  uint64
	// Scratch for a pass: (node<<32 | walk) pairs, sorted.
	pairs, pairsTmp []uint64
	// Scratch reused from step to step, so that a step over millions of
	// walkers does not fault in fresh zeroed pages for each of them:
	// candidates' targets, walks and order, and firstCandidates' nodes
	// and candidates (node2vec keeps its candidates across passes and
	// allocates them).
	targets, pw, nodes []uint32
	order              []int
	cands              []int32
	chunkBufs          [2][]byte // node2vec's membership passes' chunks (two: one read while one is searched), kept from pass to pass
}

// grow returns s with length n, reusing its array where it is large
// enough (the contents are not kept).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (w *streamWalker) walk(ctx context.Context, out []int32) error {
	t0 := time.Now()
	w.stream = w.s.stream()
	n, L := len(w.starts), w.c.Length
	nw := walk.NumWalks(n, w.c)
	row := L + 1
	// Every entry of out is written once: the start, then the steps a
	// group of g at a time, each group staged step-major in memory and
	// written row by row. Writing a step's column straight into out
	// would touch every page of it at every step: for a mapped output
	// (gigabytes) that is L sweeps of scattered writes and L rounds of
	// the kernel's writeback of the same pages; staged, it is L/g
	// sequential sweeps.
	cur := make([]int32, nw)
	for i := range cur {
		cur[i] = int32(w.starts[i%n])
		out[i*row] = cur[i]
	}
	var prev []int32
	if w.c.Mode == walk.Node2Vec {
		prev = make([]int32, nw)
		fillNone(prev)
	}
	thr := w.c.Thresholds()
	g := walkStageSteps(nw, L)
	stage := make([]int32, g*nw)
	var active []uint32
	var next []int32
	for t := 1; t <= L; {
		tg, gn := t, min(g, L-t+1) // this group's first step and its steps
		fillNone(stage[:gn*nw])    // a walk that ends, or has ended, stays -1
		ended := false
		for ; t < tg+gn; t++ {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("step %d: %w", t, err)
			}
			w.step, w.key = uint32(t), rng.WalkKey(w.c.Seed, uint32(t))
			active = active[:0]
			for i, v := range cur {
				if v >= 0 {
					active = append(active, uint32(i))
				}
			}
			if len(active) == 0 {
				ended = true
				break
			}
			next = grow(next, len(active))
			var err error
			if w.c.Mode == walk.Node2Vec && t >= 2 {
				err = w.node2vecStep(ctx, active, cur, prev, next, thr.Node2Vec)
			} else {
				err = w.firstCandidates(ctx, active, cur, next)
			}
			if err != nil {
				return fmt.Errorf("step %d: %w", t, err)
			}
			col := stage[(t-tg)*nw : (t-tg+1)*nw]
			for j, i := range active {
				v := next[j]
				if w.c.Mode == walk.PPR && v >= 0 && walk.PPRRestarts(w.key, i, thr.Restart) {
					// A restart: back to the start, or the walk ends there.
					v = int32(w.starts[int(i)%n])
					if w.c.StopAtRestart {
						v = -1
					}
				}
				if prev != nil {
					prev[i] = cur[i]
				}
				cur[i] = v
				col[i] = v
			}
		}
		writeSteps(out, stage, nw, row, tg, gn)
		if ended {
			// Every walk has ended: the rest of every row is padding.
			for i := range nw {
				fillNone(out[i*row+tg+gn : (i+1)*row])
			}
			break
		}
	}
	w.st.Wall = time.Since(t0)
	return nil
}

// walkStageBytes bounds the memory staging steps before they are written
// to the output (a variable: tests shrink it to stage a step or two).
var walkStageBytes int64 = 1 << 30

// walkStageSteps is how many steps the walker stages at once: up to 16
// (a sweep of the output per 16 steps costs little next to the passes),
// within walkStageBytes, at least one.
func walkStageSteps(walks, length int) int {
	g := min(int64(length), 16, walkStageBytes/(4*max(1, int64(walks))))
	return int(max(1, g))
}

// writeSteps writes steps tg..tg+gn-1 of every walk from stage (gn
// columns of nw, step-major) into out's rows, one row at a time.
func writeSteps(out, stage []int32, nw, row, tg, gn int) {
	for i := range nw {
		dst := out[i*row+tg : i*row+tg+gn]
		for s := range dst {
			dst[s] = stage[s*nw+i]
		}
	}
}

// fillNone sets every entry of a to -1 (no node).
func fillNone(a []int32) {
	for k := range a {
		a[k] = -1
	}
}

// firstCandidates sets next[j] to candidate 0 of walker active[j] from its
// current node (-1 where that node has no neighbors).
func (w *streamWalker) firstCandidates(ctx context.Context, active []uint32, cur, next []int32) error {
	w.nodes = grow(w.nodes, len(active))
	nodes := w.nodes
	for j, i := range active {
		nodes[j] = uint32(cur[i])
	}
	w.cands = grow(w.cands, len(active))
	cands, order, err := w.candidates(ctx, nodes, active, 0, 1, w.cands)
	if err != nil {
		return err
	}
	for p, j := range order {
		next[j] = cands[p]
	}
	return nil
}

// candidates runs one candidate pass: k candidates (attempts a0..a0+k-1)
// for each walker walks[j] standing on nodes[j], into cands (m·k
// entries). It returns them in the pass's order (by node) and order[p] =
// the j they belong to (valid until the next pass).
func (w *streamWalker) candidates(ctx context.Context, nodes, walks []uint32, a0 uint32, k int, cands []int32) (_ []int32, order []int, err error) {
	m := len(nodes)
	w.pairs, w.pairsTmp = grow(w.pairs, m), grow(w.pairsTmp, m)
	for j, v := range nodes {
		w.pairs[j] = uint64(v)<<32 | uint64(j)
	}
	sorted := radix.ByHigh32(w.pairs, w.pairsTmp)
	w.targets, w.pw, w.order = grow(w.targets, m), grow(w.pw, m), grow(w.order, m)
	targets, pw := w.targets, w.pw
	order = w.order
	for p, x := range sorted {
		j := int(uint32(x))
		targets[p], pw[p], order[p] = uint32(x>>32), walks[j], j
	}
	ls := LayerStats{Layer: int(w.step), Fanout: k, Targets: m}
	jobs, err := chunkJobs(w.s.index, targets, &ls)
	if err != nil {
		return nil, nil, fmt.Errorf("walker %w", err)
	}
	t0 := time.Now()
	if len(cands) != m*k {
		return nil, nil, fmt.Errorf("candidates: room for %d, want %d", len(cands), m*k)
	}
	var hook func(int, int64)
	if w.s.onChunk != nil {
		hook = func(c int, n int64) { w.s.onChunk(int(w.step), c, n) }
	}
	pass := streamPass{samples: cands, fanout: k, key: w.key, walks: pw, attempt0: a0}
	if err := w.stream.run(ctx, jobs, pass, &ls, hook); err != nil {
		return nil, nil, err
	}
	if ls.SampledSlots, err = checkSamples(cands, targets, k, jobs, w.s.manifest.NumNodes); err != nil {
		return nil, nil, err
	}
	ls.Wall = time.Since(t0)
	w.st.AddPass(walkPass(ls, false))
	return cands, order, nil
}

// node2vecWalker is one walker's progress through a node2vec step.
type node2vecWalker struct {
	block  uint32  // candidates of attempts block*k .. block*k+k-1 are in cands
	idx    int     // the next of them to settle
	cands  []int32 // nil until the block is fetched
	query  bool    // waiting for "is cands[p] a neighbor of prev", p = idx..k-1
	known  bool    // those answers have come: bit p of near
	near   uint8   // (walk2vecBlock <= 8)
	done   bool
	result int32
}

// isNear is the answer for the block's candidate p (known must be set).
func (wk *node2vecWalker) isNear(p int) bool { return wk.near>>p&1 != 0 }

// A walker's block's answers are the bits of a uint8.
var _ [8 - walk2vecBlock]struct{}

// node2vecStep settles node2vec's step for every active walker (DESIGN
// §3): in rounds of a candidate pass (for walkers without undecided
// candidates left) and a membership pass (for walkers whose next
// candidate's decision needs the previous node's adjacency). A membership
// pass answers the nearness of every candidate left in the walker's
// block, not only the next one: the previous node's adjacency is at hand
// for all of them, and a walker then settles its block without waiting
// for another round (a round per undecided candidate made a step take
// dozens of passes, for its slowest walkers).
func (w *streamWalker) node2vecStep(ctx context.Context, active []uint32, cur, prev, next []int32, th rng.Node2VecThresholds) error {
	ws := make([]node2vecWalker, len(active))
	const k = walk2vecBlock
	// settle takes walker j through its block's candidates as far as the
	// draws (and the answers, once known) settle them; it reports whether
	// the walker stopped at one that needs the previous node's adjacency.
	settle := func(j int) (query bool) {
		wk := &ws[j]
		i, u := active[j], uint32(prev[active[j]])
		for wk.cands != nil && !wk.done {
			x := wk.cands[wk.idx]
			if x < 0 { // no neighbors: the walk ends
				wk.done, wk.result = true, -1
				return false
			}
			a := wk.block*k + uint32(wk.idx)
			var accept, settled bool
			if wk.known {
				accept, settled = walk.Node2VecAccepts(th, w.key, i, a, uint32(x), u, wk.isNear(wk.idx)), true
			} else {
				accept, settled = walk.Node2VecSettle(th, w.key, i, a, uint32(x), u)
			}
			switch {
			case !settled:
				return true
			case accept:
				wk.done, wk.result = true, x
			default:
				wk.advance(k)
			}
		}
		return false
	}
	for {
		// Fetch the blocks walkers need, one pass per block index.
		need := map[uint32][]int{}
		for j := range ws {
			if !ws[j].done && !ws[j].query && ws[j].cands == nil {
				need[ws[j].block] = append(need[ws[j].block], j)
			}
		}
		for _, b := range sortedKeys(need) {
			js := need[b]
			nodes, walks := make([]uint32, len(js)), make([]uint32, len(js))
			for x, j := range js {
				nodes[x], walks[x] = uint32(cur[active[j]]), active[j]
			}
			cands, order, err := w.candidates(ctx, nodes, walks, b*k, k, make([]int32, len(nodes)*k))
			if err != nil {
				return err
			}
			for p, x := range order {
				ws[js[x]].cands = cands[p*k : (p+1)*k]
			}
		}
		// Settle what the draws alone settle; collect membership queries.
		var queries []int
		for j := range ws {
			if !ws[j].done && !ws[j].query && settle(j) {
				ws[j].query = true
				queries = append(queries, j)
			}
		}
		if len(queries) > 0 {
			// One query per candidate left in each querying walker's block
			// (a candidate is -1 only where they all are, and then the
			// walker is done, not querying); walker queries[x]'s are
			// us, xs[off[x]:off[x+1]].
			off := make([]int, len(queries)+1)
			for x, j := range queries {
				off[x+1] = off[x] + k - ws[j].idx
			}
			us, xs := make([]uint32, off[len(queries)]), make([]uint32, off[len(queries)])
			for x, j := range queries {
				u := uint32(prev[active[j]])
				for q, p := off[x], ws[j].idx; p < k; q, p = q+1, p+1 {
					us[q], xs[q] = u, uint32(ws[j].cands[p])
				}
			}
			near, err := w.neighborsOf(ctx, us, xs)
			if err != nil {
				return err
			}
			for x, j := range queries {
				wk := &ws[j]
				wk.query, wk.known, wk.near = false, true, 0
				for q, p := off[x], wk.idx; p < k; q, p = q+1, p+1 {
					if near[q] {
						wk.near |= 1 << p
					}
				}
			}
			// Settle what the answers settle now, so that a walker whose
			// block is used up fetches the next one in the coming round
			// (with its answers known, none of its candidates asks again).
			for _, j := range queries {
				settle(j)
			}
		}
		left := false
		for j := range ws {
			if !ws[j].done {
				left = true
				break
			}
		}
		if !left {
			break
		}
	}
	for j := range ws {
		next[j] = ws[j].result
	}
	return nil
}

// advance moves a walker past a rejected candidate, to the next block's
// (not yet fetched) when its block is used up.
func (wk *node2vecWalker) advance(k int) {
	wk.idx++
	if wk.idx == k {
		wk.block, wk.idx, wk.cands, wk.known = wk.block+1, 0, nil, false
	}
}

func sortedKeys(m map[uint32][]int) []uint32 {
	keys := make([]uint32, 0, len(m))
	for b := range m {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	return keys
}

// neighborsOf answers, for each query q, whether xs[q] is in us[q]'s
// adjacency: a membership pass over the chunks that hold the us, in
// order, each read into host memory by the lanes' chunk reader
// (Sampler.readHost: pieces read in parallel and checksummed as they
// land, then checked against the manifest) and searched while the next
// is read into the other of two buffers, as a lane reads its next chunk
// while the kernel runs on the current one. The queries are grouped by u
// with a radix sort of (u<<32 | q) pairs in the walker's scratch: a
// node2vec step at scale may ask tens of millions of them.
func (w *streamWalker) neighborsOf(ctx context.Context, us, xs []uint32) ([]bool, error) {
	t0 := time.Now()
	m := len(us)
	w.pairs, w.pairsTmp = grow(w.pairs, m), grow(w.pairsTmp, m)
	for q, u := range us {
		w.pairs[q] = uint64(u)<<32 | uint64(q)
	}
	qs := radix.ByHigh32(w.pairs, w.pairsTmp)
	sortedUs := make([]uint32, m)
	for p, e := range qs {
		sortedUs[p] = uint32(e >> 32)
	}
	ls := LayerStats{Layer: int(w.step), Targets: m}
	jobs, err := chunkJobs(w.s.index, sortedUs, &ls)
	if err != nil {
		return nil, fmt.Errorf("previous %w", err)
	}
	near := make([]bool, m)
	reads, stop := w.readChunks(ctx, jobs)
	defer stop()
	for r := range reads {
		if r.err != nil {
			return nil, fmt.Errorf("chunk %d: read for node2vec's neighbor test: %w", r.job.chunk, r.err)
		}
		if n := r.bytes; r.cached && n == 0 {
			ls.ChunksReused++
		} else {
			ls.ChunksRead++
			ls.BytesRead += n
			ls.ReadTime += r.took
			if w.s.onChunk != nil {
				w.s.onChunk(int(w.step), r.job.chunk, n)
			}
		}
		words, ok := hostorder.Words(r.data)
		if !ok {
			return nil, fmt.Errorf("chunk %d: cannot view it as words on this host", r.job.chunk)
		}
		view := chunkfmt.ChunkView(words)
		start := view.StartNode()
		for _, e := range qs[r.job.lo : r.job.lo+len(r.job.targets)] {
			q := uint32(e)
			nb := view.Neighbors(uint32(e>>32) - start)
			_, near[q] = slices.BinarySearch(nb, xs[q])
		}
		r.release()
	}
	// The reader stops short of the last chunk only when ctx is done.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ls.Wall = time.Since(t0)
	w.st.AddPass(walkPass(ls, true))
	return near, nil
}

// hostChunk is a chunk a membership pass read into one of the walker's
// host buffers, or found in the chunk cache, or the error that stopped
// the reader.
type hostChunk struct {
	job    chunkJob
	data   []byte // the chunk's bytes (readSize), in the buffer or the cache's entry
	cached bool   // data is the cache's
	// bytes is what was read from edges.chunks for it: the chunk's read
	// size, 0 when cached (or the bytes Open's probe read into the
	// entry, which no pass has counted yet).
	bytes   int64
	took    time.Duration
	err     error
	release func() // hands the buffer back to the reader
}

// readChunks reads the jobs' chunks, in order, into the walker's two host
// buffers (kept from pass to pass) on a goroutine of its own, which reads
// the next chunk while the caller searches the one it received; the
// caller releases each chunk when done with it. A chunk the chunk cache
// holds is handed over from there, not read (no candidate pass runs
// meanwhile, so its entry stays as it is). The reader stops at its
// first error (sent as a chunk) or when ctx is done. stop, which the
// caller must call, returns once the reader has exited: no buffer is then
// in use.
func (w *streamWalker) readChunks(ctx context.Context, jobs []chunkJob) (_ <-chan hostChunk, stop func()) {
	bufs := &w.chunkBufs
	free := make(chan int, len(bufs))
	for b := range bufs {
		free <- b
	}
	reads := make(chan hostChunk, len(bufs)) // as many as there are buffers: a send never blocks
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(reads)
		for _, j := range jobs {
			var b int
			select {
			case <-rctx.Done():
				return
			case b = <-free:
			}
			if rctx.Err() != nil {
				return
			}
			if e := w.cacheHolding(j.chunk); e != nil {
				opened := e.opened
				e.opened = 0
				reads <- hostChunk{job: j, data: e.mem[:w.s.readSize(j.chunk)], cached: true, bytes: opened, release: func() { free <- b }}
				continue
			}
			if n := w.s.readSize(j.chunk); int64(cap(bufs[b])) < n {
				bufs[b] = alignedBuffer(int(n), ioAlign) // page-aligned: the file may be open with O_DIRECT
			}
			t := time.Now()
			data, err := w.s.readHost(j.chunk, bufs[b])
			reads <- hostChunk{job: j, data: data, bytes: int64(len(data)), took: time.Since(t), err: err, release: func() { free <- b }}
			if err != nil {
				return
			}
		}
	}()
	return reads, func() {
		cancel()
		for range reads { // closed when the reader has exited
		}
	}
}

// cacheHolding is the chunk cache's entry holding chunk c, nil where none
// does or there is no cache.
func (w *streamWalker) cacheHolding(c int) *cacheEntry {
	if w.stream.cache == nil {
		return nil
	}
	return w.stream.cache.holding(c)
}

// walkPass is a pass's statistics as walk.Stats reports them.
func walkPass(ls LayerStats, membership bool) walk.Pass {
	return walk.Pass{
		Step: ls.Layer, Membership: membership, Candidates: ls.Fanout, Targets: ls.Targets,
		ChunksRead: ls.ChunksRead, ChunksReused: ls.ChunksReused, ChunksSkipped: ls.ChunksSkipped, Launches: ls.Launches,
		BytesRead: ls.BytesRead, ReadTime: ls.ReadTime, KernelTime: ls.KernelTime, SyncTime: ls.SyncTime, Wall: ls.Wall,
	}
}
