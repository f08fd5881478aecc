// Package featplan plans the feature reads of an epoch whose minibatches are
// all known before the first is served: an optimal (Belady/MIN) row cache
// over the epoch's minibatch order, the coalesced aligned disk reads of the
// rows the cache does not hold, an executor that performs them, a report of
// what the plan reads, and Match-Reorder, which orders the minibatches so
// that consecutive ones share many nodes.
//
// The package knows nothing of the feature store's format beyond this: rows
// of rowBytes bytes each, row i at byte i*rowBytes of one file.
package featplan

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// ErrInput is wrapped by every error about the minibatches or parameters
// given to Plan, MatchReorder or the executor.
var ErrInput = errors.New("featplan: bad input")

// never is the next use of a row that no later minibatch needs.
const never = math.MaxInt32

// Plan is the cache plan of one epoch: for every access (a row of a
// minibatch's n_id) whether it is served from a cache slot or read from disk,
// and for a row read from disk the slot it is kept in afterwards, if any.
//
// Semantics (the executor and the tests rely on them):
//   - The cache holds at most CacheRows rows; it is empty before the first
//     minibatch.
//   - Minibatch b is served whole: the rows of b that are in the cache when b
//     starts are hits (copied from their slots), every other row of b is read
//     from disk. A minibatch's rows are pinned while it is served: nothing
//     the minibatch needs is evicted before it has been copied out.
//   - After b has been served the cache content changes only between
//     minibatches, and only to rows it held or rows b read: it becomes the
//     CacheRows rows of (cache ∪ b) whose next use is nearest, rows never
//     used again excluded (Belady's MIN with bypass). A row read from disk
//     is therefore not cached when its next use is later than every cached
//     row's; in particular when one minibatch alone needs more rows than the
//     cache holds, the excess is read and not cached.
//
// This choice is optimal: no policy that serves the same minibatches in the
// same order with a cache of CacheRows rows reads fewer rows from disk (the
// exchange argument of Belady's MIN; TestPlanOptimal checks it against an
// exhaustive search).
type Plan struct {
	// NumNodes bounds the node ids; CacheRows is the cache capacity in rows.
	NumNodes  uint32
	CacheRows int
	// Distinct is the number of distinct rows the epoch needs: the rows any
	// plan must read at least once.
	Distinct int64

	batches [][]uint32
	off     []int64 // batch b's accesses are act[off[b]:off[b+1]]
	// act per access: s >= 0 a hit in slot s; s == -1 a read not kept;
	// s <= -2 a read kept in slot -s-2.
	act []int32
	// preload, sorted, is read into slots 0..len-1 before the first
	// minibatch (NewPreloadedPlan); nil for a MIN plan.
	preload []uint32
	// misses per batch, so that reports need no second pass.
	misses []int32
	// After ForgetNodes: batches is nil, sums holds each minibatch's n_id
	// checksum (nidSum), and optimum the report's OptimumBytes for rows
	// of optimumRowBytes bytes.
	sums            []uint64
	optimum         int64
	optimumRowBytes int64
	// pack, where the plan was made with PackTo and a packed copy pays,
	// says how the executor serves the misses (pack.go); packRows then
	// holds every minibatch's missed rows, sorted, once ForgetNodes has
	// dropped the node sets.
	pack     *packInfo
	packRows []uint32
}

// ForgetNodes drops the plan's reference to the minibatches' node sets,
// which are as large as the plan itself, once nothing else needs them: an
// executor then takes each minibatch's n_id from its caller
// (Reader.NextNodes), checked against a checksum kept per minibatch. What
// the report needs of them is computed first, for rows of rowBytes bytes.
// Batch(b).NID is nil afterwards, and Report fails.
func (p *Plan) ForgetNodes(rowBytes int64) {
	if p.batches == nil {
		return
	}
	p.optimum, p.optimumRowBytes = p.optimumBytes(rowBytes), rowBytes
	if p.pack != nil {
		p.packRows = p.missRows()
	}
	p.sums = make([]uint64, len(p.batches))
	for b, nid := range p.batches {
		p.sums[b] = nidSum(nid)
	}
	p.batches = nil
}

// Forgotten reports whether ForgetNodes dropped the node sets.
func (p *Plan) Forgotten() bool { return p.sums != nil }

// nidSum is a checksum of an n_id, order included.
func nidSum(nid []uint32) uint64 {
	h := uint64(len(nid))
	for _, v := range nid {
		h = (h ^ uint64(v)) * 0x100000001b3
		h ^= h >> 29
	}
	return h
}

// BatchPlan is the plan of one minibatch, aligned with its n_id.
type BatchPlan struct {
	NID []uint32
	act []int32
}

// Len is the number of rows of the minibatch.
func (b BatchPlan) Len() int { return len(b.act) }

// Hit reports whether row i of n_id is served from the cache, and from which
// slot.
func (b BatchPlan) Hit(i int) (slot int, ok bool) {
	s := b.act[i]
	return int(s), s >= 0
}

// Keep reports, for a row read from disk, the cache slot it is written to
// after the read (ok false: the row is not cached). For a hit it reports
// false.
func (b BatchPlan) Keep(i int) (slot int, ok bool) {
	s := b.act[i]
	return int(-s - 2), s <= -2
}

// NumBatches is the number of minibatches planned.
func (p *Plan) NumBatches() int { return len(p.off) - 1 }

// Batch returns the plan of minibatch b (NID nil after ForgetNodes).
func (p *Plan) Batch(b int) BatchPlan {
	bp := BatchPlan{act: p.act[p.off[b]:p.off[b+1]]}
	if p.batches != nil {
		bp.NID = p.batches[b]
	}
	return bp
}

// Misses is the number of rows minibatch b reads from disk.
func (p *Plan) Misses(b int) int { return int(p.misses[b]) }

// Accesses is the number of rows all minibatches need together.
func (p *Plan) Accesses() int64 { return int64(len(p.act)) }

// TotalMisses is the number of rows the plan reads from disk in the epoch,
// the preload included.
func (p *Plan) TotalMisses() int64 {
	n := int64(len(p.preload))
	for _, m := range p.misses {
		n += int64(m)
	}
	return n
}

// Preload returns the rows a preloaded plan reads into the cache before the
// first minibatch, sorted: slot i holds Preload()[i]. It is nil for a MIN
// plan (NewPlan).
func (p *Plan) Preload() []uint32 { return p.preload }

// NewPlan plans the cache of an epoch whose minibatches are served in the
// order given (each a node set of distinct ids below numNodes), with a cache
// of cacheRows rows (0: no cache, every row is read). The batches are kept,
// not copied: the caller must not change them while the plan is used.
//
// Time O(numNodes + accesses): every step is O(1) (the cache is bucketed by
// next use; the furthest non-empty bucket is found through a two-level
// bitmap, one word per 4096 minibatches). Memory: 4 bytes per access (the
// plan), 4 per node, 20 per cache row, 4 per minibatch.
//
// With PackTo, a part of the cache (packStaging) is set aside for the
// buffers of a packed copy of the misses, where that pays (pack.go).
func NewPlan(batches [][]uint32, numNodes uint32, cacheRows int, opts ...PlanOption) (*Plan, error) {
	o := options(opts)
	if o.packDir == "" || o.rowBytes <= 0 || cacheRows < 0 {
		return newPlan(batches, numNodes, cacheRows, o)
	}
	return newPackedPlan(batches, numNodes, cacheRows, o)
}

// newPlan is NewPlan without PackTo.
func newPlan(batches [][]uint32, numNodes uint32, cacheRows int, o *planOptions) (*Plan, error) {
	if cacheRows < 0 || cacheRows > math.MaxInt32-2 {
		return nil, fmt.Errorf("%w: cache of %d rows (want 0..%d)", ErrInput, cacheRows, math.MaxInt32-2)
	}
	if len(batches) >= math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d minibatches (want < %d)", ErrInput, len(batches), math.MaxInt32)
	}
	off := make([]int64, len(batches)+1)
	for b, nid := range batches {
		off[b+1] = off[b] + int64(len(nid))
	}
	p := &Plan{NumNodes: numNodes, CacheRows: cacheRows, batches: batches, off: off,
		misses: make([]int32, len(batches))}
	var err error
	if p.act, err = o.accessArray(p, off[len(batches)]); err != nil {
		return nil, err
	}

	// Backward pass: act holds each access's next use, seen each node's
	// nearest later use (never when none). A repeat within one minibatch
	// shows as seen == b.
	seen := make([]int32, numNodes)
	hugepages.Advise(seen) // read and written at random, once per access
	for i := range seen {
		seen[i] = never
	}
	for b := len(batches) - 1; b >= 0; b-- {
		nid := batches[b]
		act := p.act[off[b]:off[b+1]]
		for i, v := range nid {
			if v >= numNodes {
				return nil, errOutside(b, i, v, uint64(numNodes))
			}
			n := seen[v]
			if n == int32(b) {
				return nil, errTwice(b, v)
			}
			if n == never {
				p.Distinct++
			}
			act[i] = n
			seen[v] = int32(b)
		}
	}

	// Forward pass. seen becomes slotOf (node → slot, -1 absent). The cache
	// is bucketed by next use: bucket k is a doubly linked list of the slots
	// whose row is next used by minibatch k. When minibatch b starts, the
	// rows of bucket b are exactly its hits.
	slotOf := seen
	for i := range slotOf {
		slotOf[i] = -1
	}
	c := newBucketCache(cacheRows, len(batches))
	for b, nid := range batches {
		act := p.act[off[b]:off[b+1]]
		var misses int32
		// Hits first: a hit's row moves to the bucket of its next use (or
		// out of the cache when never used again), so that the misses below
		// compete with the hits' new next uses. Bucket b holds exactly b's
		// hits: it is emptied at once, and each hit linked anew.
		c.drop(int32(b))
		for i, v := range nid {
			s := slotOf[v]
			if s < 0 {
				act[i] = -act[i] - 1 // a miss: next use kept, negated
				continue
			}
			next := act[i]
			act[i] = s
			if next == never {
				c.free(s)
				slotOf[v] = -1
			} else {
				c.link(s, next)
			}
		}
		for i, v := range nid {
			if act[i] >= 0 {
				continue // a hit
			}
			misses++
			next := -act[i] - 1
			act[i] = -1
			if next == never {
				continue
			}
			s, ok := c.take(next)
			if !ok {
				continue // every cached row is needed sooner: bypass
			}
			if old := c.node[s]; old != noNode {
				slotOf[old] = -1
				if c.stamp[s] == int32(b) {
					// admitted earlier in this minibatch, now evicted again:
					// that read is not kept after all
					p.act[off[b]+int64(c.pos[s])] = -1
				}
			}
			c.node[s], c.stamp[s], c.pos[s] = v, int32(b), int32(i)
			slotOf[v] = s
			c.link(s, next)
			act[i] = -s - 2
		}
		p.misses[b] = misses
	}
	return p, nil
}

// NewPreloadedPlan is NewPlan, except that where the epoch's distinct rows
// all fit the cache it plans to read each of them once, in one sorted
// sweep before the first minibatch, into a slot it keeps for the whole
// epoch; every access is then a hit. Such a plan reads exactly the rows
// MIN reads (each distinct row once: with room for all, MIN has no other
// misses), but in one pass in file order, whose extents are as long as
// the rows' density allows, instead of a few scattered rows per
// minibatch, each costing a request and a page: the cheaper plan on a
// disk by far. Where the rows do not fit, it is NewPlan's.
func NewPreloadedPlan(batches [][]uint32, numNodes uint32, cacheRows int, opts ...PlanOption) (*Plan, error) {
	if cacheRows < 0 || cacheRows > math.MaxInt32-2 || len(batches) >= math.MaxInt32 {
		return NewPlan(batches, numNodes, cacheRows, opts...) // its error
	}
	// One pass marks the distinct rows (and checks the input as NewPlan
	// does); MIN's two passes are only needed where they do not fit.
	slot := make([]int32, numNodes)
	hugepages.Advise(slot)
	var accesses, distinct int64
	for b, nid := range batches {
		for i, v := range nid {
			if v >= numNodes {
				return nil, errOutside(b, i, v, uint64(numNodes))
			}
			switch slot[v] {
			case int32(b) + 1:
				return nil, errTwice(b, v)
			case 0:
				distinct++
			}
			slot[v] = int32(b) + 1
		}
		accesses += int64(len(nid))
	}
	if distinct == 0 || distinct > int64(cacheRows) {
		slot = nil
		return NewPlan(batches, numNodes, cacheRows, opts...)
	}
	off := make([]int64, len(batches)+1)
	for b, nid := range batches {
		off[b+1] = off[b] + int64(len(nid))
	}
	p := &Plan{NumNodes: numNodes, CacheRows: cacheRows, Distinct: distinct, batches: batches, off: off,
		misses: make([]int32, len(batches)), preload: make([]uint32, 0, distinct)}
	var err error
	if p.act, err = options(opts).accessArray(p, accesses); err != nil {
		return nil, err
	}
	// Every distinct row gets the slot of its rank among them.
	for v, s := range slot {
		if s != 0 {
			slot[v] = int32(len(p.preload))
			p.preload = append(p.preload, uint32(v))
		} else {
			slot[v] = -1
		}
	}
	for b, nid := range batches {
		act := p.act[off[b]:off[b+1]]
		for i, v := range nid {
			act[i] = slot[v]
		}
	}
	return p, nil
}

const noNode = math.MaxUint32

func options(opts []PlanOption) *planOptions {
	o := &planOptions{}
	for _, f := range opts {
		f(o)
	}
	return o
}

// errOutside and errTwice are the input errors every pass over minibatches
// checks for: a node at or beyond numNodes, a node twice in one n_id.
func errOutside(b, i int, v uint32, numNodes uint64) error {
	return fmt.Errorf("%w: minibatch %d row %d: node %d outside the graph (num_nodes %d)", ErrInput, b, i, v, numNodes)
}

func errTwice(b int, v uint32) error {
	return fmt.Errorf("%w: minibatch %d: node %d appears twice in n_id", ErrInput, b, v)
}

// bucketCache is the cache's bookkeeping: slots, linked into one list per
// next-use minibatch, and a two-level bitmap of the non-empty buckets, so
// that the row used furthest in the future is found in O(1). A list is
// only ever taken from at its head (an eviction takes any row of the
// furthest bucket) or emptied whole (minibatch b's bucket holds exactly
// b's hits, which all move on), so one link per slot suffices: a slot's
// bookkeeping is one random access where a doubly linked list's unlink
// was three dependent ones (45 M accesses at scale 22).
type bucketCache struct {
	node        []uint32 // row in slot (noNode: free)
	stamp       []int32  // minibatch that admitted the slot's row
	pos         []int32  // its position in that minibatch's n_id
	next        []int32  // list link (-1 ends)
	head        []int32  // first slot of each bucket
	lo          []uint64 // bit k: bucket k non-empty
	hi          []uint64 // bit w: lo[w] != 0
	freeList    []int32
	used, limit int
}

func newBucketCache(rows, buckets int) *bucketCache {
	c := &bucketCache{limit: rows}
	c.node = make([]uint32, rows)
	c.stamp = make([]int32, rows)
	c.pos = make([]int32, rows)
	c.next = make([]int32, rows)
	c.freeList = make([]int32, rows)
	for i := range rows {
		c.node[i] = noNode
		c.stamp[i] = -1
		c.freeList[i] = int32(rows - 1 - i) // slot 0 is taken first
	}
	c.head = make([]int32, buckets)
	for i := range c.head {
		c.head[i] = -1
	}
	c.lo = make([]uint64, (buckets+63)/64)
	c.hi = make([]uint64, (len(c.lo)+63)/64)
	return c
}

// link puts slot s (in no list) at the head of bucket k.
func (c *bucketCache) link(s, k int32) {
	h := c.head[k]
	c.next[s] = h
	if h < 0 {
		c.lo[k>>6] |= 1 << (k & 63)
		c.hi[k>>12] |= 1 << ((k >> 6) & 63)
	}
	c.head[k] = s
}

// drop empties bucket k: its slots are in no list afterwards.
func (c *bucketCache) drop(k int32) {
	if c.head[k] < 0 {
		return
	}
	c.head[k] = -1
	c.clear(k)
}

// clear marks bucket k empty in the bitmap.
func (c *bucketCache) clear(k int32) {
	c.lo[k>>6] &^= 1 << (k & 63)
	if c.lo[k>>6] == 0 {
		c.hi[k>>12] &^= 1 << ((k >> 6) & 63)
	}
}

// free returns slot s (in no list) to the free list.
func (c *bucketCache) free(s int32) {
	c.node[s] = noNode
	c.stamp[s] = -1
	c.freeList = append(c.freeList, s)
	c.used--
}

// maxKey is the furthest next use in the cache (-1 when empty).
func (c *bucketCache) maxKey() int32 {
	for w := len(c.hi) - 1; w >= 0; w-- {
		if h := c.hi[w]; h != 0 {
			lw := w<<6 + bits.Len64(h) - 1
			return int32(lw<<6 + bits.Len64(c.lo[lw]) - 1)
		}
	}
	return -1
}

// take finds a slot for a row next used by minibatch next: a free one, or
// the slot of a row used later than next (taken out of its list; its node
// left for the caller to unmap). ok false: the row should not be cached.
func (c *bucketCache) take(next int32) (int32, bool) {
	if c.used < c.limit {
		n := len(c.freeList) - 1
		s := c.freeList[n]
		c.freeList = c.freeList[:n]
		c.used++
		return s, true
	}
	if c.limit == 0 {
		return 0, false
	}
	k := c.maxKey()
	if k <= next {
		return 0, false
	}
	s := c.head[k]
	c.head[k] = c.next[s]
	if c.head[k] < 0 {
		c.clear(k)
	}
	return s, true
}
