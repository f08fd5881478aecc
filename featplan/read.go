package featplan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/internal/aio"
	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// ErrOrder is returned by Reader.Next after the last minibatch of the plan.
var ErrOrder = errors.New("featplan: no minibatch left in the plan")

// OpenDirect opens a feature file for reading with O_DIRECT (the reads of a
// plan bypass the page cache), falling back to a buffered open where the
// file system refuses it (tmpfs answers EINVAL); direct says which.
func OpenDirect(path string) (f *os.File, direct bool, err error) {
	f, direct, err = aio.OpenDirect(path)
	if err != nil {
		return nil, false, fmt.Errorf("featplan: %w", err)
	}
	return f, direct, nil
}

// Reader executes a Plan over a feature file: minibatch after minibatch, in
// the plan's order, it copies the cached rows out of its cache, reads the
// others with the extents of Extents into an aligned buffer, and places every
// row at its position in the minibatch (and in its cache slot when the plan
// keeps it). One Reader per epoch; not safe for concurrent use.
type Reader struct {
	f        io.ReaderAt
	name     string
	rowBytes int64
	plan     *Plan
	opts     ExtentOptions
	cache    []byte
	bufs     [][]byte // one aligned read buffer per read in flight (ReadBuffers at most)
	next     int
	keys     []uint64
	rows     []uint32
	ext      []Extent
	rep      Report
	optimum  int64 // the plan's Report.OptimumBytes, once computed; -1 before
	// pk is the packed copy of the misses, where the plan asks for one
	// (Plan.Packed) and it could be made (pack.go); nil otherwise.
	pk *packed
	// aio is the AIO context random reads of an O_DIRECT file go
	// through (internal/aio), from the first; noAIO: none (refused, or
	// closed).
	aio        *aio.Context
	noAIO      bool
	aioCleanup runtime.Cleanup
}

// NewReader prepares the execution of p over f, whose row v (of rowBytes
// bytes) is at byte v*rowBytes; name is used in errors. It allocates the
// cache (p.CacheRows*rowBytes bytes) and a buffer of opts.MaxExtent bytes
// aligned to Align, so f may be opened with O_DIRECT.
func NewReader(f io.ReaderAt, name string, rowBytes int64, p *Plan, opts ExtentOptions) (*Reader, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if rowBytes <= 0 {
		return nil, fmt.Errorf("%w: %s: row of %d bytes", ErrInput, name, rowBytes)
	}
	if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		fi, err := st.Stat()
		if err != nil {
			return nil, fmt.Errorf("featplan: %s: %w", name, err)
		}
		if want := int64(p.NumNodes) * rowBytes; fi.Size() < want {
			return nil, fmt.Errorf("%w: %s holds %d bytes, want at least %d (%d rows of %d bytes)", ErrInput, name, fi.Size(), want, p.NumNodes, rowBytes)
		}
	}
	r := &Reader{f: f, name: name, rowBytes: rowBytes, plan: p, opts: opts,
		cache: make([]byte, int64(p.CacheRows)*rowBytes), optimum: -1}
	// Every minibatch's hits are copied out of the cache at random: on
	// 2 MiB pages a 192 MiB cache fits the TLB's reach.
	hugepages.Advise(r.cache)
	r.rep = Report{RowBytes: rowBytes, CacheRows: p.CacheRows, DistinctRows: p.Distinct, CompulsoryBytes: p.Distinct * rowBytes}
	return r, nil
}

func alignedBuffer(n int64) []byte {
	b := make([]byte, n+Align)
	o := int(-uintptr(unsafe.Pointer(&b[0])) & (Align - 1))
	return b[o : int64(o)+n : int64(o)+n]
}

// Next fills dst (at least len(n_id)*rowBytes bytes) with the rows of the
// next minibatch's n_id, in order, and returns its index in the plan; after
// the last one it returns ErrOrder. The plan must hold its node sets (see
// NextNodes).
func (r *Reader) Next(dst []byte) (int, error) {
	if r.plan.Forgotten() {
		return r.next, fmt.Errorf("%w: Next on a plan whose node sets are forgotten; use NextNodes", ErrInput)
	}
	if r.next >= r.plan.NumBatches() {
		return r.next, ErrOrder
	}
	return r.read(r.plan.Batch(r.next), dst)
}

// NextNodes is Next with the minibatch's n_id given by the caller, as it
// must be once the plan has forgotten its node sets (Plan.ForgetNodes):
// nid must be the n_id the plan was made with (its length and checksum
// are checked; where the plan still holds it, every id).
func (r *Reader) NextNodes(nid []uint32, dst []byte) (int, error) {
	b := r.next
	if b >= r.plan.NumBatches() {
		return b, ErrOrder
	}
	bp := r.plan.Batch(b)
	switch {
	case len(nid) != bp.Len():
		return b, fmt.Errorf("%w: minibatch %d has %d nodes, its plan %d", ErrInput, b, len(nid), bp.Len())
	case bp.NID != nil && !slices.Equal(nid, bp.NID), bp.NID == nil && nidSum(nid) != r.plan.sums[b]:
		return b, fmt.Errorf("%w: minibatch %d: n_id differs from the one planned", ErrInput, b)
	}
	bp.NID = nid
	return r.read(bp, dst)
}

// read serves minibatch r.next, whose plan and n_id are bp.
func (r *Reader) read(bp BatchPlan, dst []byte) (int, error) {
	b := r.next
	rb := r.rowBytes
	if int64(len(dst)) < int64(bp.Len())*rb {
		return b, fmt.Errorf("%w: minibatch %d needs %d bytes, buffer has %d", ErrInput, b, int64(bp.Len())*rb, len(dst))
	}
	if b == 0 && len(r.plan.preload) > 0 {
		if err := r.readPreload(); err != nil {
			return b, err
		}
	}
	if b == 0 && r.plan.pack != nil && r.pk == nil {
		t0 := time.Now()
		ok, why, err := r.pack()
		if err != nil {
			return b, err
		}
		r.rep.PackError = why
		if ok {
			r.rep.Reads += r.pk.reads
			r.rep.BytesRead += r.pk.bytesRead
			r.rep.PackBytes = r.pk.copyBytes
			r.rep.PackS = time.Since(t0).Seconds()
		}
	}
	// Hits first: a slot may be given to a row read below.
	r.copyHits(bp, dst)
	keys := r.keys[:0]
	for i, v := range bp.NID {
		if _, ok := bp.Hit(i); !ok {
			keys = append(keys, uint64(v)<<32|uint64(i))
		}
	}
	slices.Sort(keys)
	r.keys = keys
	rows := r.rows[:0]
	for _, k := range keys {
		rows = append(rows, uint32(k>>32))
	}
	r.rows = rows
	if r.pk != nil {
		if err := r.readPacked(b, bp, dst, keys, rows); err != nil {
			return b, err
		}
		r.rep.PackedRows += int64(len(rows))
	} else {
		ext, err := Extents(r.ext[:0], rows, rb, r.opts)
		r.ext = ext
		if err != nil {
			return b, err
		}
		if err := r.readExtents(b, bp, dst, keys, rows, ext); err != nil {
			return b, err
		}
		for _, e := range ext {
			r.rep.Reads++
			r.rep.BytesRead += e.Length
		}
	}
	r.rep.Batches++
	r.rep.RowsNeeded += int64(bp.Len())
	r.rep.RowsFromDisk += int64(len(rows))
	r.rep.RowsFromCache += int64(bp.Len() - len(rows))
	r.next++
	return b, nil
}

// ReadBuffers bounds the read buffers of a Reader (or of a ReadRows
// call): one aligned buffer per read in flight, as long as the longest
// extent, at most ReadBuffers bytes of them (plus Align each, to align
// them): sixteen extents of DefaultMaxExtent, or DefaultDepth of a few
// pages (random rows).
const ReadBuffers = 16 << 20

// hitsPerWorker is the least rows a goroutine copies out of the cache.
const hitsPerWorker = 8192

// copyHits copies minibatch bp's cache hits to their positions in dst, on
// every core for a large minibatch: with the rows preloaded every row is a
// hit, and the copy (tens of megabytes a minibatch) is the Reader's work.
func (r *Reader) copyHits(bp BatchPlan, dst []byte) {
	rb := r.rowBytes
	n := len(bp.NID)
	copyRange := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if s, ok := bp.Hit(i); ok {
				copy(dst[int64(i)*rb:int64(i+1)*rb], r.cache[int64(s)*rb:int64(s+1)*rb])
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), n/hitsPerWorker)
	if workers < 2 {
		copyRange(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyRange(n*w/workers, n*(w+1)/workers)
		}()
	}
	wg.Wait()
}

// readExtents reads minibatch b's extents (readEach) and places each row
// at its position in dst and in its cache slot. Rows and cache slots of
// one minibatch are distinct (the plan writes a slot at most once per
// minibatch), so the readers never write the same bytes.
func (r *Reader) readExtents(b int, bp BatchPlan, dst []byte, keys []uint64, rows []uint32, ext []Extent) error {
	rb := r.rowBytes
	return r.readEach(fmt.Sprintf("minibatch %d", b), rows, ext, func(e Extent, buf []byte) error {
		for j := e.First; j < e.Last; j++ {
			i := int(uint32(keys[j]))
			src := buf[int64(rows[j])*rb-e.Offset:][:rb]
			if err := r.check(rows[j], src); err != nil {
				return err
			}
			copy(dst[int64(i)*rb:int64(i+1)*rb], src)
			if s, ok := bp.Keep(i); ok {
				copy(r.cache[int64(s)*rb:int64(s+1)*rb], src)
			}
		}
		return nil
	})
}

// readPreload reads a preloaded plan's rows into their slots (slot i
// holds Preload()[i]) before the first minibatch: extents over the sorted
// rows, read as readEach reads them.
func (r *Reader) readPreload() error {
	rows := r.plan.preload
	rb := r.rowBytes
	ext, err := Extents(nil, rows, rb, r.opts)
	if err != nil {
		return err
	}
	err = r.readEach("preload", rows, ext, func(e Extent, buf []byte) error {
		for j := e.First; j < e.Last; j++ {
			src := buf[int64(rows[j])*rb-e.Offset:][:rb]
			if err := r.check(rows[j], src); err != nil {
				return err
			}
			copy(r.cache[int64(j)*rb:int64(j+1)*rb], src)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.rep.PreloadRows = int64(len(rows))
	r.rep.Reads += int64(len(ext))
	for _, e := range ext {
		r.rep.BytesRead += e.Length
	}
	return nil
}

// check checks row v's bytes src with ExtentOptions.Check, if any.
func (r *Reader) check(v uint32, src []byte) error {
	if r.opts.Check == nil {
		return nil
	}
	return r.opts.Check(int64(v)*r.rowBytes, src)
}

// readEach reads the extents ext (over the sorted rows rows), up to Depth
// at once, each into an aligned buffer of its own (a disk serves several
// requests in flight far faster than one after another), and calls place
// with each extent's bytes; place may run concurrently with itself and
// must write disjoint memory, and its error (a row that failed its check)
// fails the read. what names the reads in errors. An O_DIRECT file is
// read through Linux AIO, Depth reads in flight from one goroutine
// (internal/aio: goroutines blocked in pread hold the scheduler's Ps, and on
// two cores kept about two reads in flight); any other, or where the
// kernel refuses AIO, by Depth goroutines each calling ReadAt.
func (r *Reader) readEach(what string, rows []uint32, ext []Extent, place func(e Extent, buf []byte) error) error {
	rb := r.rowBytes
	// One buffer per read in flight, as long as the longest extent; at
	// most ReadBuffers bytes of them (fewer reads in flight for long
	// extents, which stream anyway).
	var maxLen int64
	for _, e := range ext {
		maxLen = max(maxLen, e.Length)
	}
	depth := min(max(1, r.opts.Depth), len(ext), max(1, int(ReadBuffers/max(1, maxLen))))
	for w := range depth {
		if w == len(r.bufs) {
			r.bufs = append(r.bufs, nil)
		}
		if int64(len(r.bufs[w])) < maxLen {
			r.bufs[w] = alignedBuffer(maxLen)
		}
	}
	// need is how many bytes of extent e the read must have: it may end
	// short at the end of the file (rounded up to Align) as long as it
	// covers its rows.
	need := func(e Extent) int64 { return (int64(rows[e.Last-1])+1)*rb - e.Offset }
	if fd, ok := aio.DirectFD(r.f); ok && depth > 1 && r.aioContext() != nil {
		prep := func(k, slot int) (int64, []byte) { return ext[k].Offset, r.bufs[slot][:ext[k].Length] }
		return r.aio.Read(fd, len(ext), depth, prep, func(k, _ int, buf []byte, n int, err error) error {
			e := ext[k]
			if int64(n) < need(e) {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("featplan: %s: %s: read %d bytes at %d, want %d: %w", r.name, what, n, e.Offset, need(e), err)
			}
			if err := place(e, buf[:e.Length]); err != nil {
				return fmt.Errorf("featplan: %s: %s: %w", r.name, what, err)
			}
			return nil
		})
	}
	errs := make([]error, depth)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(ext); k = int(next.Add(1) - 1) {
				e := ext[k]
				buf := r.bufs[w][:e.Length]
				n, err := r.f.ReadAt(buf, e.Offset)
				if int64(n) < need(e) {
					if err == nil || err == io.EOF {
						err = io.ErrUnexpectedEOF
					}
					errs[w] = fmt.Errorf("featplan: %s: %s: read %d bytes at %d, want %d: %w", r.name, what, n, e.Offset, need(e), err)
					return
				}
				if err := place(e, buf); err != nil {
					errs[w] = fmt.Errorf("featplan: %s: %s: %w", r.name, what, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// aioContext returns the Reader's AIO context, set up on first use (nil
// where the kernel refuses one, and from then on), destroyed by Close or,
// for a Reader dropped without it, when the Reader is collected.
func (r *Reader) aioContext() *aio.Context {
	if r.aio == nil && !r.noAIO {
		a, err := aio.New(max(1, r.opts.Depth))
		if err != nil {
			r.noAIO = true
		} else {
			r.aio = a
			r.aioCleanup = runtime.AddCleanup(r, func(a *aio.Context) { a.Destroy() }, r.aio)
		}
	}
	return r.aio
}

// Close ends what the Reader has in the background (the reading back of
// a packed copy, whose file it removes); it may be called at any time,
// and more than once. A Reader that served every minibatch has nothing
// left in the background.
func (r *Reader) Close() error {
	if r.pk != nil {
		r.pk.stop()
		r.pk.wg.Wait()
	}
	if r.aio != nil {
		r.aioCleanup.Stop()
		r.aio.Destroy()
		r.aio, r.noAIO = nil, true
	}
	return nil
}

// Report is what the minibatches served so far read (the plan's Report once
// all are served). OptimumBytes, the whole epoch's, is reported only then.
func (r *Reader) Report() Report {
	rep := r.rep
	if r.next < r.plan.NumBatches() {
		rep.finish()
		return rep
	}
	if r.optimum < 0 {
		r.optimum = r.plan.optimumBytes(r.rowBytes)
	}
	rep.OptimumBytes = r.optimum
	rep.finish()
	return rep
}

// ReadRows reads the rows of one node set outside any plan (a minibatch of
// seeds of the caller's choosing): the rows of nid (distinct node ids, in
// any order) from f, whose row v (of rowBytes bytes) is at byte v*rowBytes,
// into dst in nid's order. The rows are read as a Reader reads a
// minibatch's disk rows: sorted, coalesced into the aligned extents of
// Extents and read up to o.Depth at once, so f may be opened with
// O_DIRECT (OpenDirect). name is used in errors. The report counts one
// minibatch with every row from disk.
func ReadRows(f io.ReaderAt, name string, rowBytes int64, nid []uint32, dst []byte, o ExtentOptions) (Report, error) {
	if err := o.check(); err != nil {
		return Report{}, err
	}
	if rowBytes <= 0 {
		return Report{}, fmt.Errorf("%w: %s: row of %d bytes", ErrInput, name, rowBytes)
	}
	if int64(len(dst)) < int64(len(nid))*rowBytes {
		return Report{}, fmt.Errorf("%w: %d rows need %d bytes, buffer has %d", ErrInput, len(nid), int64(len(nid))*rowBytes, len(dst))
	}
	keys := make([]uint64, len(nid))
	for i, v := range nid {
		keys[i] = uint64(v)<<32 | uint64(i)
	}
	slices.Sort(keys)
	rows := make([]uint32, len(keys))
	for j, k := range keys {
		rows[j] = uint32(k >> 32)
	}
	ext, err := Extents(nil, rows, rowBytes, o)
	if err != nil {
		return Report{}, err
	}
	r := &Reader{f: f, name: name, rowBytes: rowBytes, opts: o}
	defer r.Close()
	err = r.readEach("rows", rows, ext, func(e Extent, buf []byte) error {
		for j := e.First; j < e.Last; j++ {
			i := int64(uint32(keys[j]))
			src := buf[int64(rows[j])*rowBytes-e.Offset:][:rowBytes]
			if err := r.check(rows[j], src); err != nil {
				return err
			}
			copy(dst[i*rowBytes:(i+1)*rowBytes], src)
		}
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	n := int64(len(nid))
	rep := Report{Batches: 1, RowBytes: rowBytes, RowsNeeded: n, RowsFromDisk: n, Reads: int64(len(ext)),
		DistinctRows: n, CompulsoryBytes: n * rowBytes}
	for _, e := range ext {
		rep.BytesRead += e.Length
	}
	rep.finish()
	return rep, nil
}
