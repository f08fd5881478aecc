// The chunk cache: where the devices can run their kernel over host
// memory (the emulated SmartSSD, xrt.HostBuffers), every chunk buffer is
// an entry of one cache shared by the lanes, the layers of an epoch, the
// epochs and the walker's passes, so that a chunk still in memory is not
// read again.

package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// chunkCache is a Sampler's chunk memory when its lanes run over host
// memory: up to capacity entries of slotBytes (the largest chunk's read
// size), allocated as they are first needed and kept until Close. Each
// entry holds one chunk, checked against its CRC-32C when it was read;
// the lanes' kernels run over the entries directly, and a chunk is read
// only when no entry holds it.
//
// Order and eviction (DESIGN §4b). Every pass (a layer
// of an epoch, a walk step) is planned before it starts: its chunks are
// known then. Passes alternate direction (serpentine: ascending chunk
// order, then descending, across layers and epochs), so that the chunks
// a pass read last, which are those still cached, are the first the next
// pass wants. A chunk not cached is read into the entry whose chunk is
// needed furthest in the future (Belady's MIN): an empty entry first; a
// chunk needed later in this pass is needed sooner than any other; the
// others are ranked by their place in the next pass, predicted to want
// every chunk in the opposite direction. When every pass wants all N
// chunks and the cache holds P < N, a pass therefore reads exactly N−P
// of them, the least any order and eviction can read with P in memory
// when the pass starts; with P ≥ N each chunk is read once, by the first
// pass that wants it.
//
// Execution follows the plan whatever the lanes' timing, so the reads
// are the plan's: a read into an entry waits until the uses of the entry
// earlier in the pass have finished with it (their kernels returned),
// and an entry is marked as holding its chunk only after the chunk was
// read whole and checked, so a failed read leaves it empty.
type chunkCache struct {
	slotBytes int64
	capacity  int
	numChunks int
	budget    int64 // Options.ChunkCache as given (0: the floor)
	entries   []*cacheEntry
	// passes counts the passes planned: pass p goes in ascending chunk
	// order when p is even.
	passes uint64
	alloc  func(n int64) ([]byte, error)
	free   func([]byte) error
	// populate maps an entry's fresh memory in, writable, before its
	// first read (prefault).
	populate func([]byte)

	mu      sync.Mutex    // guards the entries' done counts
	changed chan struct{} // closed (and replaced) when a use is done
}

// cacheEntry is one chunk buffer of the cache.
type cacheEntry struct {
	id  int
	mem []byte // slotBytes of page-aligned host memory
	// chunk is the chunk whose checked bytes mem holds, -1 for none. It
	// is written by the pass's reader of the entry once its read checked
	// out, and read by its later users, which the done counts order.
	chunk int
	// opened is the bytes Open's probe read into the entry, not yet
	// counted in any pass's statistics.
	opened int64
	// done counts the entry's uses finished in the current pass
	// (chunkCache.mu).
	done int
	// ready is closed once the entry's memory is mapped in (prefault):
	// its first read waits for it.
	ready chan struct{}
}

// cacheStep is one job of a planned pass: the chunk's targets and the
// entry it is sampled from, read into it first when read is set. after
// is the number of the entry's uses earlier in the pass, which must be
// done before this one starts.
type cacheStep struct {
	chunkJob
	entry *cacheEntry
	read  bool
	after int
	// opened is bytes Open's probe read into an entry this pass does not
	// use, counted with this step's read (the pass's first).
	opened int64
}

// cacheCapacity is the entries a budget of budget bytes buys: budget /
// slotBytes, at least two per lane (the double buffering streaming needs
// whatever the budget) and at most one per chunk beyond that.
func cacheCapacity(budget, slotBytes int64, lanes, numChunks int) int {
	floor := 2 * lanes
	n := int(min(budget/max(slotBytes, 1), int64(max(numChunks, floor))))
	return max(n, floor)
}

// newChunkCache returns an empty cache of capacity entries of slotBytes,
// in anonymous mappings (page-aligned, as O_DIRECT needs; returned to the
// system at Close, not left to the garbage collector).
//
// An entry's memory is mapped in (madvise MADV_POPULATE_WRITE) before
// its first read, on a goroutine of its own while the pass's earlier
// reads run: an O_DIRECT read into fresh anonymous memory faults every
// page in itself, which on this project's VM made a 512 MiB read take
// 1.3–1.6 s instead of 0.8 s, where populating takes 0.22 s on the other
// core. A kernel without MADV_POPULATE_WRITE (before Linux 5.14) refuses
// the hint, and the read faults the pages in as before.
func newChunkCache(budget, slotBytes int64, capacity, numChunks int) *chunkCache {
	return &chunkCache{
		slotBytes: slotBytes, capacity: capacity, numChunks: numChunks, budget: budget,
		alloc: func(n int64) ([]byte, error) {
			mem, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
			if err == nil {
				// Populated 512 times fewer faults at a time, and read at
				// random by the kernel within the TLB's reach.
				hugepages.Advise(mem)
			}
			return mem, err
		},
		free:     unix.Munmap,
		populate: populateMemory,
		changed:  make(chan struct{}),
	}
}

// newEntry allocates one more entry (the caller checked the capacity),
// its memory not yet mapped in: the caller hands it to prefault, which
// closes its ready (close waits for every entry's).
func (c *chunkCache) newEntry() (*cacheEntry, error) {
	mem, err := c.alloc(c.slotBytes)
	if err != nil {
		return nil, fmt.Errorf("chunk cache: allocate entry %d of %d bytes: %w", len(c.entries), c.slotBytes, err)
	}
	e := &cacheEntry{id: len(c.entries), mem: mem, chunk: -1, ready: make(chan struct{})}
	c.entries = append(c.entries, e)
	return e, nil
}

// prefault maps the entries' memory in, one after the other, on a
// goroutine of its own, closing each one's ready as it is done; the
// entries are new (their ready still open), in the order their first
// reads come.
func (c *chunkCache) prefault(entries []*cacheEntry) {
	if len(entries) == 0 {
		return
	}
	go func() {
		for _, e := range entries {
			if c.populate != nil {
				c.populate(e.mem)
			}
			close(e.ready)
		}
	}()
}

// allocated is the host memory the entries hold.
func (c *chunkCache) allocated() int64 { return int64(len(c.entries)) * c.slotBytes }

// resident is the number of entries holding a chunk.
func (c *chunkCache) resident() int {
	n := 0
	for _, e := range c.entries {
		if e.chunk >= 0 {
			n++
		}
	}
	return n
}

// holding returns the entry holding chunk ch, nil if none does. Only
// between passes.
func (c *chunkCache) holding(ch int) *cacheEntry {
	for _, e := range c.entries {
		if e.chunk == ch {
			return e
		}
	}
	return nil
}

// close releases the entries' memory, once no prefault is under way.
func (c *chunkCache) close() error {
	var err error
	for _, e := range c.entries {
		<-e.ready
	}
	for _, e := range c.entries {
		if e2 := c.free(e.mem); e2 != nil && err == nil {
			err = fmt.Errorf("chunk cache: release entry %d: %w", e.id, e2)
		}
		e.mem, e.chunk = nil, -1
	}
	c.entries = nil
	return err
}

// plan orders a pass's jobs (given in ascending chunk order, one per
// chunk) in this pass's direction and assigns each an entry: the one
// holding its chunk (a hit) or the one it is read into, by the rule in
// chunkCache's comment. It allocates the entries the plan needs first.
func (c *chunkCache) plan(jobs []chunkJob) ([]cacheStep, error) {
	asc := c.passes%2 == 0
	c.passes++
	order := slices.Clone(jobs)
	if !asc {
		slices.Reverse(order)
	}
	// pos[ch]: chunk ch's place in this pass, -1 if it has no job.
	pos := make([]int, c.numChunks)
	for i := range pos {
		pos[i] = -1
	}
	for i, j := range order {
		pos[j.chunk] = i
	}
	// The next pass goes the other way; a chunk's rank in it is its
	// distance from where it starts.
	nextRank := func(ch int) int {
		if asc { // next pass descending
			return c.numChunks - 1 - ch
		}
		return ch
	}
	nextUse := func(ch, i int) int {
		if pos[ch] > i {
			return pos[ch]
		}
		return len(order) + nextRank(ch)
	}
	held := make([]int, len(c.entries)) // each entry's chunk as the plan goes
	where := make(map[int]int, len(c.entries))
	for k, e := range c.entries {
		held[k] = e.chunk
		if e.chunk >= 0 {
			where[e.chunk] = k
		}
	}
	uses := make([]int, len(c.entries), c.capacity)
	steps := make([]cacheStep, len(order))
	var fresh []*cacheEntry // allocated by this plan, in the order of their first reads
	for i, j := range order {
		k, hit := where[j.chunk]
		if !hit {
			k = -1
			for v, ch := range held { // an empty entry first
				if ch < 0 {
					k = v
					break
				}
			}
			if k < 0 && len(c.entries) < c.capacity {
				e, err := c.newEntry()
				if err != nil {
					c.prefault(fresh)
					return nil, err
				}
				fresh = append(fresh, e)
				held, uses = append(held, -1), append(uses, 0)
				k = len(c.entries) - 1
			}
			if k < 0 { // the entry whose chunk is needed furthest ahead
				far := -1
				for v, ch := range held {
					if u := nextUse(ch, i); u > far {
						k, far = v, u
					}
				}
				delete(where, held[k])
			}
			held[k] = j.chunk
			where[j.chunk] = k
		}
		steps[i] = cacheStep{chunkJob: j, entry: c.entries[k], read: !hit, after: uses[k]}
		uses[k]++
	}
	// Every byte read is counted by the first pass after Open: the
	// probe's bytes in an entry this pass leaves alone go with its first
	// read.
	if first := slices.IndexFunc(steps, func(st cacheStep) bool { return st.read }); first >= 0 {
		for k, e := range c.entries {
			if e.opened > 0 && uses[k] == 0 {
				steps[first].opened += e.opened
				e.opened = 0
			}
		}
	}
	for _, e := range c.entries {
		e.done = 0
	}
	c.prefault(fresh)
	return steps, nil
}

// wait blocks until n of e's uses in this pass are done, or ctx ends.
func (c *chunkCache) wait(ctx context.Context, e *cacheEntry, n int) error {
	for {
		c.mu.Lock()
		done, ch := e.done, c.changed
		c.mu.Unlock()
		if done >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// release records that one use of e is done.
func (c *chunkCache) release(e *cacheEntry) {
	c.mu.Lock()
	e.done++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// CacheStats describes the chunk cache after an epoch (Stats.Cache).
type CacheStats struct {
	// Budget is Options.ChunkCache: the bytes of chunk memory asked for.
	Budget int64 `json:"budget"`
	// Slots is the chunks the cache holds at most: Budget over
	// SlotBytes (the largest chunk's read size), at least two per device
	// (the double buffering every epoch needs) and at most one per chunk.
	Slots     int   `json:"slots"`
	SlotBytes int64 `json:"slot_bytes"`
	// Allocated is the host memory its entries hold (at most Slots ×
	// SlotBytes); Resident the chunks it holds after the epoch.
	Allocated int64 `json:"allocated"`
	Resident  int   `json:"resident"`
}

func (c *chunkCache) stats() *CacheStats {
	return &CacheStats{Budget: c.budget, Slots: c.capacity, SlotBytes: c.slotBytes, Allocated: c.allocated(), Resident: c.resident()}
}

// AutoChunkCache is the chunk cache a command gets by default
// (--chunk-cache auto) for the graph of manifest m in a process that may
// use available bytes (memavail.Available): every chunk when they fit in
// half of that, else that half. The other half is left to the epochs
// (two are live), the feature cache and the page cache the process is
// charged for inside a memory cgroup. Without a figure for the memory
// (available <= 0) it is 0: the two buffers per device streaming needs.
func AutoChunkCache(m *chunkfmt.Manifest, available int64) int64 {
	if available <= 0 {
		return 0
	}
	return min(int64(len(m.Chunks))*slotBytes(m), available/2)
}

// ChunkCacheSlots is the chunk cache Open makes for the graph of manifest
// m over devices devices with Options.ChunkCache budget: slots chunks of
// slotBytes each (the largest chunk's read size), at least two per
// device and at most one per chunk beyond that.
func ChunkCacheSlots(m *chunkfmt.Manifest, devices int, budget int64) (slots int, slot int64) {
	slot = slotBytes(m)
	return cacheCapacity(budget, slot, max(devices, 1), len(m.Chunks)), slot
}

// slotBytes is the size of one chunk buffer: the largest chunk's read
// size (BytesUsed rounded up to a page), at least a page.
func slotBytes(m *chunkfmt.Manifest) int64 {
	var n int64 = ioAlign
	for _, c := range m.Chunks {
		n = max(n, roundUpTo(c.BytesUsed, ioAlign))
	}
	return n
}

// stream is how a pass's jobs reach the lanes: each lane's own two
// buffers (cache nil: runLayer, the XRT path, where a SmartSSD reads its
// chunks peer-to-peer) or the chunk cache (runCached), whose entries read
// fills: chunk c's read size into buf, checked against its CRC-32C
// (Sampler.readEntry).
type stream struct {
	lanes []lane
	cache *chunkCache
	read  func(c int, buf []byte) (int64, error)
	// side, when not nil, takes the chunks its cost model gives to
	// random reads out of each layer (randchoice.go).
	side *epochSide
}

// run streams one pass's jobs (ascending chunk order, one per chunk).
func (s stream) run(ctx context.Context, jobs []chunkJob, pass streamPass, ls *LayerStats, onChunk func(chunk int, bytes int64)) error {
	if s.cache == nil {
		return runLayer(ctx, s.lanes, jobs, pass, ls, onChunk)
	}
	return runCached(ctx, s, jobs, pass, ls, onChunk)
}

// runCached streams a pass through the chunk cache: the pass is planned
// (chunkCache.plan), then every lane's reader takes the next step in the
// plan's order, reads its chunk into its entry where the plan says so
// (once the entry's earlier uses are done), and hands it to the lane's
// kernel goroutine, which runs the launches over the entry and marks the
// use done. At most two steps per lane are between claim and done, as
// with a lane's own double buffers. Results land as in runLayer; the
// first error cancels the pass, and all goroutines have exited when
// runCached returns.
func runCached(ctx context.Context, s stream, jobs []chunkJob, pass streamPass, ls *LayerStats, onChunk func(chunk int, bytes int64)) error {
	c := s.cache
	steps, err := c.plan(jobs)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int // the next step to claim (mu)
	)
	merge := func(f func()) { mu.Lock(); f(); mu.Unlock() }
	claim := func() (cacheStep, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next == len(steps) {
			return cacheStep{}, false
		}
		next++
		return steps[next-1], true
	}
	for _, ln := range s.lanes {
		tokens := make(chan struct{}, 2)
		tokens <- struct{}{}
		tokens <- struct{}{}
		loaded := make(chan cacheStep, 2)
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
				select {
				case <-lctx.Done():
					return
				case <-tokens:
				}
				if lctx.Err() != nil {
					return
				}
				st, ok := claim()
				if !ok {
					return
				}
				e := st.entry
				if err := c.wait(lctx, e, st.after); err != nil {
					return
				}
				if st.read {
					select { // its memory mapped in
					case <-e.ready:
					case <-lctx.Done():
						return
					}
				}
				// Bytes Open's probe read into the entry are counted by
				// the first pass that uses the entry: as the read of the
				// chunk it holds, or with the read that replaces it.
				opened := e.opened + st.opened
				e.opened = 0
				switch {
				case !st.read && e.chunk != st.chunk:
					cancel(fmt.Errorf("chunk cache: chunk %d planned in entry %d, which holds chunk %d", st.chunk, e.id, e.chunk))
					return
				case !st.read && opened > 0:
					chunks++
					bytes += opened
					if onChunk != nil {
						onChunk(st.chunk, opened)
					}
				case !st.read:
					reused++
				default:
					// Empty until the read checks out: a failed read
					// leaves no half-filled entry for a later pass.
					e.chunk = -1
					t := time.Now()
					n, err := s.read(st.chunk, e.mem)
					readTime += time.Since(t)
					if err != nil {
						cancel(fmt.Errorf("%s: chunk %d: read: %w", ln.name(), st.chunk, err))
						return
					}
					e.chunk = st.chunk
					chunks++
					bytes += n + opened
					if onChunk != nil {
						onChunk(st.chunk, n+opened)
					}
				}
				select {
				case loaded <- st:
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
			for st := range loaded {
				n, kt, stt, err := pass.runJob(lctx, ln, st.chunkJob, local, func(la launch) (time.Duration, time.Duration, error) { return ln.runEntry(st.entry, la) })
				launches, kernel, syncT = launches+n, kernel+kt, syncT+stt
				if err != nil {
					cancel(err)
				}
				c.release(st.entry)
				tokens <- struct{}{} // capacity 2: never blocks
			}
		}()
	}
	wg.Wait()
	return context.Cause(lctx)
}
