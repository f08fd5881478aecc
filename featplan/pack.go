package featplan

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// A packed copy of an epoch's misses (PackTo): where the rows an epoch
// needs do not fit its cache, MIN still reads a few thousand rows per
// minibatch scattered over the whole feature file, one request each
// (2.1 M rows in 2.0 M requests at scale 22 with a 192 MiB cache), and a
// disk serves random requests at a small fraction of its sequential rate
// (61 k 4 KiB reads/s at its best depth, 250 MB/s, against 750 MB/s on
// the development VM). The epoch's future is known, so the executor
// turns those random reads into sequential ones, as DiskGNN packs each
// minibatch's rows contiguously:
//
//  1. Before the first minibatch, one sweep over the feature file, in
//     file order (the extents over every row the epoch misses, holes of up
//     to packSweepGap read through), copies each missed row to its place
//     in a packed copy: a file (unlinked, O_DIRECT) holding the misses in
//     the order the minibatches take them, cut into partitions of a few
//     MiB. A partition's rows arrive in file order, so each partition is
//     a region of the file whose rows are written in that order, through
//     one buffer per partition (packShape), and the executor keeps, per
//     miss, where in its partition it lies.
//  2. While the minibatches are served, their misses come from the
//     partitions, read back in order (sequentially, up to two ahead) into
//     a ring of three buffers.
//
// The disk then reads the feature file once and the misses twice more
// (written, read back), all sequentially, instead of a request per miss.
// Every row is still checked against its CRC (ExtentOptions.Check) when a
// minibatch takes it from the packed copy, so a row corrupt in the feature
// file fails the minibatch that needs it, as before, and a packed copy
// changed under the executor is caught too. The buffers come out of the
// cache's budget: the ring, and the sweep's reads, from the staging the
// plan sets aside (packStaging: the plan is made with that much less
// cache); the partitions' write buffers from the cache itself, which holds
// nothing before the first minibatch (from the staging where the cache
// is too small for them). Measured in docs/PERFORMANCE.md ("Feature reads
// at the disk's limit").

// PackStaging is the most a plan sets aside of its cache for a packed
// copy's buffers (at most an eighth of the cache): a ring of three
// partitions read back, or the sweep's reads while it packs. Every row it
// takes from the cache is more misses: at scale 22 with a 192 MiB cache,
// MIN misses 2.14 M rows with the whole cache, 2.44 M with 16 MiB set
// aside, 2.62 M with 32 MiB; partitions of 5 MiB are read back at the
// disk's sequential rate all the same.
const PackStaging = 16 << 20

// RequestCost, WriteCost and StreamRate are the disk model that decides
// whether a packed copy pays: a random read costs RequestCost (1/61.4 k:
// fio's best random 4 KiB O_DIRECT rate on the development VM, io_uring
// at depth 64, 2026-11-26), a write request WriteCost (fio's random
// O_DIRECT writes: 4 KiB at 6.4 k/s from four threads and 9.1 k/s from
// one, 88 KiB at 9.4 k/s, 2026-11-27: about the same per request up to a
// hundred KiB), and StreamRate bytes/s are read or written sequentially
// (fio's 1 MiB O_DIRECT reads at depth 8: 751 MB/s; `dd iflag=direct
// bs=4M` 776–828 MB/s; 1 MiB writes 1.8 GB/s, counted at the read rate).
const (
	RequestCost = 16 * time.Microsecond
	WriteCost   = 125 * time.Microsecond
	StreamRate  = 750e6
)

// packSweepGap is the largest hole the packing sweep reads through: past
// about 64 KiB a random read runs at the disk's sequential rate (fio,
// depth 32: 16 KiB reads 388 MB/s, 64 KiB 664 MB/s, 256 KiB 584 MB/s),
// so a hole of 1 MiB costs at most what a new request would.
const packSweepGap = 1 << 20

// packSweepExtent and packSweepDepth shape the sweep's reads: up to
// packSweepDepth extents of up to packSweepExtent bytes in flight, and
// together at most half the staging.
const (
	packSweepExtent = 4 << 20
	packSweepDepth  = 3
)

// PackTo lets a plan whose rows do not fit its cache serve its misses from
// a packed copy (see above) in dir, a directory on a disk (not a tmpfs,
// where the copy would be memory), for rows of rowBytes bytes. The plan
// sets PackStaging (at most an eighth of the cache) aside for its
// buffers, and keeps it only where the disk model says the copy is
// faster than reading the misses at random, and where the copy takes at
// most twice the feature file's space; otherwise the plan is NewPlan's
// with the whole cache. The executor (Reader) packs before the first
// minibatch; where dir refuses O_DIRECT, it reads at random as without.
func PackTo(dir string, rowBytes int64) PlanOption {
	return func(o *planOptions) { o.packDir, o.rowBytes = dir, rowBytes }
}

// PackModel replaces the disk model PackTo decides with (RequestCost,
// WriteCost, StreamRate): a disk whose random read costs requestCost, a
// write request writeCost, and which reads and writes streamRate bytes/s
// sequentially.
func PackModel(requestCost, writeCost time.Duration, streamRate float64) PlanOption {
	return func(o *planOptions) { o.requestCost, o.writeCost, o.streamRate = requestCost, writeCost, streamRate }
}

// diskModel is PackTo's disk: seconds per random read and per write
// request, bytes/s.
type diskModel struct{ request, write, rate float64 }

func (o *planOptions) disk() diskModel {
	d := diskModel{RequestCost.Seconds(), WriteCost.Seconds(), StreamRate}
	if o.requestCost > 0 {
		d.request = o.requestCost.Seconds()
	}
	if o.writeCost > 0 {
		d.write = o.writeCost.Seconds()
	}
	if o.streamRate > 0 {
		d.rate = o.streamRate
	}
	return d
}

// packInfo is a packed plan's: where the copy goes, the rows' size, the
// bytes set aside for the buffers.
type packInfo struct {
	dir      string
	rowBytes int64
	staging  int64
}

// packStaging is the part of a cache of cacheRows rows set aside for a
// packed copy's buffers: PackStaging, at most an eighth of the cache, in
// whole rows; 0 where that leaves too little for three partitions.
func packStaging(cacheRows int, rowBytes int64) int64 {
	s := min(PackStaging, int64(cacheRows)*rowBytes/8) / rowBytes * rowBytes
	if s < 3*max(rowBytes, Align) {
		return 0
	}
	return s
}

// newPackedPlan is NewPlan with PackTo: MIN with the cache less the
// staging, kept where the copy pays; else MIN with the whole cache.
func newPackedPlan(batches [][]uint32, numNodes uint32, cacheRows int, o *planOptions) (*Plan, error) {
	rb := o.rowBytes
	staging := packStaging(cacheRows, rb)
	if o.staging > 0 {
		staging = min(o.staging/rb*rb, int64(cacheRows)*rb)
	}
	if staging == 0 {
		return newPlan(batches, numNodes, cacheRows, o)
	}
	p, err := newPlan(batches, numNodes, cacheRows-int(staging/rb), o)
	if err != nil {
		return nil, err
	}
	if c := p.packCost(rb, staging, o.disk()); c.pays(int64(numNodes) * rb) {
		p.pack = &packInfo{dir: o.packDir, rowBytes: rb, staging: staging}
		return p, nil
	}
	return newPlan(batches, numNodes, cacheRows, o)
}

// packCost is what a plan's misses cost read at random or packed, in the
// disk model's seconds.
type packCost struct {
	random, packed float64
	scratch        int64 // bytes of the packed copy
}

// pays reports whether the packed copy is faster, and takes at most twice
// a feature file of fileBytes.
func (c packCost) pays(fileBytes int64) bool {
	return c.scratch > 0 && c.packed < c.random && c.scratch <= 2*fileBytes
}

// packCost estimates both ways of reading p's misses: at random, each
// minibatch's extents (DefaultExtentOptions) at RequestCost each plus
// their bytes at StreamRate; packed, the sweep's extents and bytes, the
// copy's writes (as packShape cuts them for a staging of staging bytes)
// and its bytes written and read back.
func (p *Plan) packCost(rowBytes, staging int64, d diskModel) packCost {
	o := DefaultExtentOptions()
	var c packCost
	var rows []uint32
	var ext []Extent
	seen := make([]uint64, (int64(p.NumNodes)+63)/64)
	var misses int64
	for b := range p.NumBatches() {
		bp := p.Batch(b)
		rows = rows[:0]
		for i, v := range bp.NID {
			if _, hit := bp.Hit(i); !hit {
				rows = append(rows, v)
				seen[v>>6] |= 1 << (v & 63)
			}
		}
		slices.Sort(rows)
		ext, _ = Extents(ext[:0], rows, rowBytes, o)
		for _, e := range ext {
			c.random += d.request + float64(e.Length)/d.rate
		}
		misses += int64(len(rows))
	}
	sweep, _ := Extents(nil, setRows(seen), rowBytes, sweepOptions(staging))
	var bytes int64
	for _, e := range sweep {
		bytes += e.Length
	}
	c.scratch = misses * rowBytes
	part, nparts, wb, _ := packShape(int(misses), staging, int64(p.CacheRows)*rowBytes, rowBytes)
	writes := int64(nparts) * ((int64(part)*rowBytes + wb - 1) / wb)
	c.packed = float64(bytes+2*c.scratch)/d.rate + float64(len(sweep))*d.request + float64(writes)*d.write
	return c
}

// packShape is how a packed copy of misses rows of rowBytes is cut and
// written, for a staging of staging bytes and a cache of cacheBytes:
// positions per partition (three partitions are the staging), partitions,
// the bytes of each write (whole pages), and whether the write buffers
// are the cache's memory. Before the first minibatch the cache holds
// nothing: where it is large enough, the buffers (one per partition and
// one per write in flight) are its memory, and as large as packWriteMax
// (this VM's disk writes 1 MiB at 1.8 GB/s, 88 KiB at 0.8, and beside the
// sweep's reads 0.4 and 0.3; a write request costs about WriteCost up to
// a hundred KiB); otherwise they share the half of the staging the
// sweep's reads leave.
func packShape(misses int, staging, cacheBytes, rowBytes int64) (part, nparts int, wb int64, arena bool) {
	part = max(1, int(staging/3/rowBytes))
	nparts = (misses + part - 1) / part
	nbufs := int64(nparts + packWriters)
	rowPages := (rowBytes + Align - 1) &^ (Align - 1)
	wb = max(Align, staging/2/nbufs&^(Align-1))
	if per := (cacheBytes - Align) / nbufs; per-rowPages > wb {
		wb, arena = min(packWriteMax, per-rowPages)&^(Align-1), true
	}
	return part, nparts, wb, arena
}

// setRows returns the rows whose bits are set, ascending.
func setRows(set []uint64) []uint32 {
	var rows []uint32
	for w, x := range set {
		for ; x != 0; x &= x - 1 {
			rows = append(rows, uint32(w<<6+bits.TrailingZeros64(x)))
		}
	}
	return rows
}

// sweepOptions shapes the packing sweep's extents for a staging of
// staging bytes.
func sweepOptions(staging int64) ExtentOptions {
	ext := max(Align, min(packSweepExtent, staging/(2*packSweepDepth))&^(Align-1))
	return ExtentOptions{MaxGap: packSweepGap, MaxExtent: ext, Depth: packSweepDepth}
}

// missRows returns every minibatch's missed rows, each minibatch's
// sorted, in serving order: the order a packed copy holds them in. The
// plan must hold its node sets.
func (p *Plan) missRows() []uint32 {
	out := make([]uint32, 0, p.TotalMisses()-int64(len(p.preload)))
	for b := range p.NumBatches() {
		bp := p.Batch(b)
		start := len(out)
		for i, v := range bp.NID {
			if _, hit := bp.Hit(i); !hit {
				out = append(out, v)
			}
		}
		slices.Sort(out[start:])
	}
	return out
}

// Packed reports whether the plan's misses are to be served from a packed
// copy (PackTo, where it pays).
func (p *Plan) Packed() bool { return p.pack != nil }

// packed is a Reader's packed copy of its plan's misses.
type packed struct {
	f        *os.File
	name     string   // the copy's path, in errors
	rb       int64    // row bytes
	rows     []uint32 // the missed rows in serving order: position p's row
	inv      []uint32 // position p's index among its partition's rows
	part     int      // positions per partition
	region   int64    // bytes per partition in the file (aligned)
	nparts   int
	bad      map[uint32]error // rows whose check failed in the sweep
	pos      int              // the next position served
	cur      int              // the partition in buf (-1: none)
	buf      []byte
	ready    chan loaded
	free     chan []byte
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	// figures: the sweep's requests and bytes, the copy's bytes.
	reads, bytesRead, copyBytes int64
}

// loaded is a partition read back.
type loaded struct {
	k   int
	buf []byte
	err error
}

// pack makes the packed copy of r's plan: the sweep over the feature file
// and the partitions written, then the reading back started. ok false:
// the copy could not be made where it should go (no O_DIRECT there, no
// room, a failed write: why says), and the plan is read at random, which
// needs none of it. An error reading the feature file fails the read.
func (r *Reader) pack() (ok bool, why string, err error) {
	pi := r.plan.pack
	rb := r.rowBytes
	if rb != pi.rowBytes {
		return false, fmt.Sprintf("planned for rows of %d bytes, read with %d", pi.rowBytes, rb), nil
	}
	f, direct, err := createScratch(pi.dir)
	if err != nil {
		return false, err.Error(), nil
	}
	if !direct {
		f.Close()
		return false, fmt.Sprintf("%s refuses O_DIRECT (a tmpfs?)", pi.dir), nil
	}
	rows := r.plan.packRows
	if rows == nil {
		rows = r.plan.missRows()
	}
	n := len(rows)
	pk := &packed{f: f, name: f.Name(), rb: rb, rows: rows, cur: -1, done: make(chan struct{})}
	// Three partitions of the staging are read back at a time.
	pk.part, pk.nparts, _, _ = packShape(n, pi.staging, int64(len(r.cache)), rb)
	pk.region = (int64(pk.part)*rb + Align - 1) &^ (Align - 1)
	// The copy's blocks allocated at once: O_DIRECT writes past the end
	// of a file, or into its holes, take the file's lock one at a time
	// (ext4), and the partitions are written all over it.
	if err := fallocate(f, int64(pk.nparts)*pk.region); err != nil {
		pk.stop()
		return false, fmt.Sprintf("%d bytes in %s: %v", int64(pk.nparts)*pk.region, pk.name, err), nil
	}
	if err := pk.write(r); err != nil {
		pk.stop()
		var we *copyWriteError
		if errors.As(err, &we) {
			return false, we.Error(), nil
		}
		return false, "", err
	}
	r.pk = pk
	// A Reader dropped without Close stops its reading back.
	runtime.AddCleanup(r, func(pk *packed) { pk.stop() }, pk)
	pk.start()
	return true, "", nil
}

// copyWriteError is a failed write of the packed copy (not of the data).
type copyWriteError struct{ err error }

func (e *copyWriteError) Error() string { return "writing the packed copy: " + e.err.Error() }
func (e *copyWriteError) Unwrap() error { return e.err }

// createScratch creates the packed copy's file in dir, unlinked, O_DIRECT
// where the file system allows it (direct false: it does not, and the
// file is of no use).
func createScratch(dir string) (*os.File, bool, error) {
	f, err := os.CreateTemp(dir, "featplan-pack-*.bin")
	if err != nil {
		return nil, false, err
	}
	name := f.Name()
	f.Close()
	g, direct, err := openDirectRW(name)
	os.Remove(name) // the descriptor keeps it
	if err != nil {
		return nil, false, err
	}
	return g, direct, nil
}

// write sweeps r's feature file and writes every missed row to its
// partition of the copy.
func (pk *packed) write(r *Reader) error {
	rb := pk.rb
	n := len(pk.rows)
	// The positions in file order (by row, then position): the order the
	// sweep meets them in, and so each partition's order.
	keys := make([]uint64, n)
	for p, v := range pk.rows {
		keys[p] = uint64(v)<<32 | uint64(p)
	}
	slices.Sort(keys)
	pk.inv = make([]uint32, n)
	fill := make([]int, pk.nparts)
	var distinct []uint32
	for _, k := range keys {
		p := int(uint32(k))
		pk.inv[p] = uint32(fill[p/pk.part])
		fill[p/pk.part]++
		if v := uint32(k >> 32); len(distinct) == 0 || distinct[len(distinct)-1] != v {
			distinct = append(distinct, v)
		}
	}
	staging := r.plan.pack.staging
	ext, err := Extents(nil, distinct, rb, sweepOptions(staging))
	if err != nil {
		return err
	}
	distinct = nil

	// One write buffer per partition, its first wb bytes handed to the
	// writers whenever it holds that many (whole pages, as O_DIRECT
	// needs; the rest, less than a row, goes on in a fresh one): packShape.
	nbufs := int64(pk.nparts + packWriters)
	rowPages := (rb + Align - 1) &^ (Align - 1)
	_, _, wb, inCache := packShape(n, staging, int64(len(r.cache)), rb)
	var arena [][]byte
	if inCache {
		c := r.cache[int(-uintptr(unsafe.Pointer(unsafe.SliceData(r.cache)))&(Align-1)):]
		for i := range nbufs {
			arena = append(arena, c[i*(wb+rowPages):][:0:wb+rowPages])
		}
	}
	w := newPackWriter(pk.f, wb+rowPages, int(nbufs), arena)
	bufs := make([][]byte, pk.nparts)
	written := make([]int64, pk.nparts) // bytes of each partition handed to the writers
	flush := func(k int, last bool) {
		b := bufs[k]
		if len(b) == 0 {
			return
		}
		if last {
			w.write(b[:(int64(len(b))+Align-1)&^(Align-1)], int64(k)*pk.region+written[k])
			bufs[k] = nil
			return
		}
		next := w.buffer()
		next = append(next, b[wb:]...)
		w.write(b[:wb], int64(k)*pk.region+written[k])
		written[k] += wb
		bufs[k] = next
	}
	end := int64(r.plan.NumNodes) * rb
	j := 0 // the next key
	err = streamExtents(r.f, ext, packSweepDepth, end, func(e Extent, buf []byte) error {
		hi := e.Offset + int64(len(buf))
		for ; j < n && (int64(keys[j]>>32)+1)*rb <= hi; j++ {
			v, p := uint32(keys[j]>>32), int(uint32(keys[j]))
			src := buf[int64(v)*rb-e.Offset:][:rb]
			if j == 0 || uint32(keys[j-1]>>32) != v {
				if err := r.check(v, src); err != nil {
					if pk.bad == nil {
						pk.bad = map[uint32]error{}
					}
					pk.bad[v] = err
				}
			}
			k := p / pk.part
			if bufs[k] == nil {
				bufs[k] = w.buffer()
			}
			bufs[k] = append(bufs[k], src...)
			for int64(len(bufs[k])) >= wb {
				flush(k, false)
			}
		}
		pk.reads++
		pk.bytesRead += e.Length
		return nil
	})
	if err == nil && j < n {
		err = fmt.Errorf("featplan: %s: the sweep met %d of %d missed rows", r.name, j, n)
	}
	for k := range bufs {
		flush(k, true)
	}
	if werr := w.close(); err == nil && werr != nil {
		err = &copyWriteError{werr}
	}
	if err != nil {
		return fmt.Errorf("featplan: %s: packing the misses into %s: %w", r.name, pk.name, err)
	}
	pk.copyBytes = int64(n) * rb
	return nil
}

// packWriters is how many writes of the copy are in flight, packWriteMax
// the largest.
const (
	packWriters  = 4
	packWriteMax = 1 << 20
)

// packWriter writes buffers at offsets of a file, packWriters at once, and
// recycles them.
type packWriter struct {
	f    *os.File
	size int64
	jobs chan packWrite
	pool chan []byte
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

type packWrite struct {
	b   []byte
	off int64
}

func newPackWriter(f *os.File, size int64, buffers int, arena [][]byte) *packWriter {
	w := &packWriter{f: f, size: size, jobs: make(chan packWrite, packWriters), pool: make(chan []byte, buffers)}
	for i := range buffers {
		if i < len(arena) {
			w.pool <- arena[i]
		} else {
			w.pool <- nil // allocated on first use
		}
	}
	for range packWriters {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for j := range w.jobs {
				if _, err := w.f.WriteAt(j.b, j.off); err != nil {
					w.mu.Lock()
					w.err = errors.Join(w.err, err)
					w.mu.Unlock()
				}
				w.pool <- j.b[:0]
			}
		}()
	}
	return w
}

// buffer returns an empty aligned buffer of w.size bytes' capacity,
// waiting for a write to end where all are in use.
func (w *packWriter) buffer() []byte {
	b := <-w.pool
	if b == nil {
		b = alignedBuffer(w.size)[:0]
	}
	return b
}

func (w *packWriter) write(b []byte, off int64) { w.jobs <- packWrite{b, off} }

func (w *packWriter) close() error {
	close(w.jobs)
	w.wg.Wait()
	return w.err
}

// streamExtents reads the extents of f in order, depth at once, and calls
// use with each one's bytes in order, on the caller's goroutine. A read
// may end short at end, the file's size (an extent rounded up to Align
// runs past it).
func streamExtents(f io.ReaderAt, ext []Extent, depth int, end int64, use func(e Extent, buf []byte) error) error {
	type res struct {
		n   int
		err error
	}
	depth = max(1, min(depth, len(ext)))
	var maxLen int64
	for _, e := range ext {
		maxLen = max(maxLen, e.Length)
	}
	bufs := make([][]byte, depth)
	done := make([]chan res, depth)
	for i := range bufs {
		bufs[i] = alignedBuffer(maxLen)
		done[i] = make(chan res, 1)
	}
	start := func(i int) {
		e, b, c := ext[i], bufs[i%depth][:ext[i].Length], done[i%depth]
		go func() {
			n, err := f.ReadAt(b, e.Offset)
			c <- res{n, err}
		}()
	}
	for i := range depth {
		start(i)
	}
	for i, e := range ext {
		rs := <-done[i%depth]
		want := min(e.Length, end-e.Offset)
		if int64(rs.n) < want {
			err := rs.err
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			// Let the reads in flight end before their buffers go.
			for k := i + 1; k < min(i+depth, len(ext)); k++ {
				<-done[k%depth]
			}
			return fmt.Errorf("read %d bytes at %d, want %d: %w", rs.n, e.Offset, want, err)
		}
		err := use(e, bufs[i%depth][:min(e.Length, int64(rs.n))])
		if err != nil {
			for k := i + 1; k < min(i+depth, len(ext)); k++ {
				<-done[k%depth]
			}
			return err
		}
		if i+depth < len(ext) {
			start(i + depth)
		}
	}
	return nil
}

// start begins reading the partitions back, in order, into a ring of
// three buffers.
func (pk *packed) start() {
	pk.ready = make(chan loaded, 3)
	pk.free = make(chan []byte, 3)
	for range 3 {
		pk.free <- nil
	}
	pk.wg.Add(1)
	go func() {
		defer pk.wg.Done()
		defer pk.f.Close()
		for k := range pk.nparts {
			var b []byte
			select {
			case b = <-pk.free:
			case <-pk.done:
				return
			}
			if b == nil {
				b = alignedBuffer(pk.region)
			}
			rows := min(pk.part, len(pk.rows)-k*pk.part)
			size := (int64(rows)*pk.rb + Align - 1) &^ (Align - 1)
			err := readPieces(pk.f, b[:size], int64(k)*pk.region)
			select {
			case pk.ready <- loaded{k, b, err}:
			case <-pk.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// readPieces reads len(b) bytes at off, in pieces of 1 MiB, two at once.
func readPieces(f io.ReaderAt, b []byte, off int64) error {
	const piece = 1 << 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs error
	sem := make(chan struct{}, 2)
	for lo := int64(0); lo < int64(len(b)); lo += piece {
		hi := min(lo+piece, int64(len(b)))
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := f.ReadAt(b[lo:hi], off+lo)
			if n < int(hi-lo) {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				mu.Lock()
				errs = errors.Join(errs, fmt.Errorf("read %d bytes at %d, want %d: %w", n, off+lo, hi-lo, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// row returns position p's row bytes, reading partitions back as needed
// (positions are taken in order).
func (pk *packed) row(p int) ([]byte, error) {
	k := p / pk.part
	for pk.cur < k {
		if pk.buf != nil {
			pk.free <- pk.buf
			pk.buf = nil
		}
		var l loaded
		select {
		case l = <-pk.ready:
		case <-pk.done:
			return nil, fmt.Errorf("%s: closed", pk.name)
		}
		if l.err != nil {
			return nil, fmt.Errorf("reading back partition %d of %s: %w", l.k, pk.name, l.err)
		}
		pk.cur, pk.buf = l.k, l.buf
	}
	return pk.buf[int64(pk.inv[p])*pk.rb:][:pk.rb], nil
}

// stop ends the reading back (the goroutine closes the file).
func (pk *packed) stop() {
	pk.stopOnce.Do(func() {
		close(pk.done)
		if pk.ready == nil {
			pk.f.Close()
		}
	})
}

// readPacked serves minibatch b's misses (keys: row<<32 | position in
// n_id, sorted; rows: their rows) from the packed copy, each row checked
// and placed in dst and its cache slot.
func (r *Reader) readPacked(b int, bp BatchPlan, dst []byte, keys []uint64, rows []uint32) error {
	pk := r.pk
	rb := r.rowBytes
	if pk.pos+len(rows) > len(pk.rows) {
		return fmt.Errorf("featplan: %s: minibatch %d: %d misses past the packed copy's %d", r.name, b, pk.pos+len(rows), len(pk.rows))
	}
	for j, v := range rows {
		p := pk.pos + j
		if pk.rows[p] != v {
			return fmt.Errorf("featplan: %s: minibatch %d: miss %d is node %d, the packed copy holds %d", r.name, b, j, v, pk.rows[p])
		}
		src, err := pk.row(p)
		if err != nil {
			return fmt.Errorf("featplan: %s: minibatch %d: %w", r.name, b, err)
		}
		if err := r.check(v, src); err != nil {
			if first, ok := pk.bad[v]; ok {
				err = first // the feature file's row
			} else {
				err = fmt.Errorf("the copy of row %d in %s: %w", v, pk.name, err)
			}
			return fmt.Errorf("featplan: %s: minibatch %d: %w", r.name, b, err)
		}
		i := int(uint32(keys[j]))
		copy(dst[int64(i)*rb:int64(i+1)*rb], src)
		if s, ok := bp.Keep(i); ok {
			copy(r.cache[int64(s)*rb:int64(s+1)*rb], src)
		}
	}
	pk.pos += len(rows)
	if pk.pos == len(pk.rows) && pk.buf != nil {
		pk.free <- pk.buf // the last partition: the goroutine has ended
		pk.buf = nil
	}
	return nil
}
