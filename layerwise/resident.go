package layerwise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featstore"
)

// sweepPiece is the size of one read of the resident sweep, as a chunk's
// (fullscan): the sequential O_DIRECT rate of dd bs=4M.
const sweepPiece = 8 << 20

// sweepAhead is the pieces a mapped sweep asks the kernel for ahead of
// the one it checks.
const sweepAhead = 2

// gatherParallel is the rows of a minibatch above which Rows copies them
// on every core.
const gatherParallel = 8192

// resident is a feature file read whole into memory by one sequential
// sweep (sweep), whose rows are available as the sweep passes them.
//
// The file is mapped (read-only, shared) and the sweep populates the
// mapping piece by piece in file order (MADV_POPULATE_READ, the kernel's
// sequential read-ahead), so the rows land in the page cache. Reading
// them into anonymous memory instead cost, on the development VM, a first
// touch of every fresh page far slower than the disk (a 2 GiB buffer: 29 s
// against 3.5 s for the same reads into a reused buffer, 2.9–3.9 s for the
// mapping populated in pieces). A store without a file (featstore.NewStore)
// is read into memory. Rows are checked as their piece lands; a page the
// kernel evicts later and reads again is not checked again.
type resident struct {
	st   *featstore.Store
	r    io.ReaderAt
	file *os.File // r or the mapping's file, where resident opened it
	path string
	rb   int64
	size int64 // the file's bytes: num_nodes × rb
	mem  []byte
	mmap bool // mem is a mapping of the file, unmapped once unreachable

	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	ready  int64         // rows read and checked, from row 0
	err    error         // the sweep failed
	wake   chan struct{} // closed (and replaced) when ready or err changes
	took   time.Duration // the sweep's time, once done
	read   int64         // bytes read so far
	direct bool
}

// openFeatureFile opens st's feature file for this package's reads:
// O_DIRECT where the file system allows it, checked to be the file st
// opened (a store replaced since would be another); a store without a
// path (featstore.NewStore) is read through its own reader.
func openFeatureFile(st *featstore.Store) (r io.ReaderAt, f *os.File, path string, direct bool, err error) {
	path = st.FeaturesPath()
	if path == "" {
		return st.FeatureReader(), nil, st.Manifest().Features.File, false, nil
	}
	f, direct, err = featplan.OpenDirect(path)
	if err != nil {
		return nil, nil, "", false, fmt.Errorf("layerwise: %w", err)
	}
	if sf, ok := st.FeatureReader().(interface{ Stat() (os.FileInfo, error) }); ok {
		a, err1 := f.Stat()
		b, err2 := sf.Stat()
		if err := errors.Join(err1, err2); err != nil {
			f.Close()
			return nil, nil, "", false, fmt.Errorf("layerwise: %s: %w", path, err)
		}
		if !os.SameFile(a, b) {
			f.Close()
			return nil, nil, "", false, fmt.Errorf("layerwise: %s: the path now names another file than the store opened (replaced by chunkify features --force?): %w", path, fs.ErrNotExist)
		}
	}
	return f, f, path, direct, nil
}

// startResident maps the file (or allocates its bytes) and starts the
// sweep.
func startResident(st *featstore.Store) (*resident, error) {
	rb := st.RowBytes()
	size := int64(st.NumNodes()) * rb
	res := &resident{st: st, rb: rb, size: size, wake: make(chan struct{}), done: make(chan struct{})}
	if err := res.mapFile(); err != nil {
		return nil, err
	}
	if !res.mmap {
		r, f, path, direct, err := openFeatureFile(st)
		if err != nil {
			return nil, err
		}
		res.r, res.file, res.path, res.direct = r, f, path, direct
		res.mem = alignedBuffer((size + featplan.Align - 1) / featplan.Align * featplan.Align)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res.cancel = cancel
	go res.sweep(ctx)
	return res, nil
}

// mapFile maps the store's feature file, read-only, where it has one and
// the file is the one the store opened; the mapping is unmapped when the
// resident is unreachable (a minibatch's Rows may copy from it after
// Close). Without a file, or where mapping fails, mem stays nil.
func (r *resident) mapFile() error {
	path := r.st.FeaturesPath()
	if path == "" || r.size == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("layerwise: %w", err)
	}
	if sf, ok := r.st.FeatureReader().(interface{ Stat() (os.FileInfo, error) }); ok {
		a, err1 := f.Stat()
		b, err2 := sf.Stat()
		if err := errors.Join(err1, err2); err != nil {
			f.Close()
			return fmt.Errorf("layerwise: %s: %w", path, err)
		}
		if !os.SameFile(a, b) {
			f.Close()
			return fmt.Errorf("layerwise: %s: the path now names another file than the store opened (replaced by chunkify features --force?): %w", path, fs.ErrNotExist)
		}
	}
	mem, err := mapReadOnly(f, r.size)
	if err != nil {
		f.Close()
		return nil // read into memory instead
	}
	r.mem, r.mmap, r.file, r.path = mem, true, f, path
	runtime.AddCleanup(r, unmap, mem)
	return nil
}

// alignedBuffer returns n bytes starting at a multiple of featplan.Align.
func alignedBuffer(n int64) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, n+featplan.Align)
	o := int(-uintptr(unsafe.Pointer(&b[0])) & (featplan.Align - 1))
	return b[o : int64(o)+n : int64(o)+n]
}

// sweep reads the file in order, piece by piece, checks the rows each
// piece completes and publishes them.
func (r *resident) sweep(ctx context.Context) {
	defer close(r.done)
	t0 := time.Now()
	var checked int64 // rows
	for off := int64(0); off < r.size; {
		if ctx.Err() != nil {
			r.publish(checked, ctx.Err())
			return
		}
		k := min(int64(sweepPiece), int64(len(r.mem))-off)
		if r.mmap {
			// The next pieces are asked for ahead (read-ahead runs while
			// this one is checked), then this one is waited for.
			if next := off + k; next < int64(len(r.mem)) {
				willNeed(r.mem[next:min(next+sweepAhead*sweepPiece, int64(len(r.mem)))])
			}
			populate(r.mem[off : off+k])
		} else {
			n, err := r.r.ReadAt(r.mem[off:off+k], off)
			if err != nil && !(err == io.EOF && off+int64(n) >= r.size) {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				r.publish(checked, fmt.Errorf("layerwise: %s: reading %d bytes at %d: %w", r.path, k, off, err))
				return
			}
		}
		off = min(off+k, r.size)
		rows := off / r.rb
		if err := r.st.FeatureChecksums().Check(checked*r.rb, r.mem[checked*r.rb:rows*r.rb]); err != nil {
			// The rows before the first bad one are good: publish them.
			good := checked
			for ; good < rows; good++ {
				if r.st.FeatureChecksums().Check(good*r.rb, r.mem[good*r.rb:(good+1)*r.rb]) != nil {
					break
				}
			}
			r.publish(good, fmt.Errorf("layerwise: %w", err))
			return
		}
		checked = rows
		r.mu.Lock()
		r.read = off
		r.mu.Unlock()
		r.publish(checked, nil)
	}
	r.mu.Lock()
	r.took = time.Since(t0)
	r.mu.Unlock()
	r.publish(checked, nil)
}

// publish records the rows ready (and a failure) and wakes the waiters.
func (r *resident) publish(ready int64, err error) {
	r.mu.Lock()
	r.ready = ready
	if err != nil && r.err == nil {
		r.err = err
	}
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()
}

// wait returns once rows [0, upto) are ready, or why they will not be.
func (r *resident) wait(ctx context.Context, upto int64) error {
	for {
		r.mu.Lock()
		ready, err, wake := r.ready, r.err, r.wake
		r.mu.Unlock()
		if ready >= upto {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// rows copies the rows of nid into dst once the sweep has passed them.
func (r *resident) rows(ctx context.Context, nid []uint32, dst []byte) error {
	var top uint32
	for _, v := range nid {
		top = max(top, v)
	}
	if len(nid) > 0 {
		if err := r.wait(ctx, int64(top)+1); err != nil {
			return err
		}
	}
	gather := func(lo, hi int) {
		rb := r.rb
		for i := lo; i < hi; i++ {
			o := int64(nid[i]) * rb
			copy(dst[int64(i)*rb:int64(i+1)*rb], r.mem[o:o+rb])
		}
	}
	p := runtime.GOMAXPROCS(0)
	if len(nid) < gatherParallel || p == 1 {
		gather(0, len(nid))
		return nil
	}
	var wg sync.WaitGroup
	step := (len(nid) + p - 1) / p
	for lo := 0; lo < len(nid); lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			gather(lo, hi)
		}(lo, min(lo+step, len(nid)))
	}
	wg.Wait()
	return nil
}

// stats returns the sweep's bytes read so far and its time (0 until done).
func (r *resident) stats() (read int64, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read, r.took
}

// close stops the sweep and closes the file it opened.
func (r *resident) close() error {
	r.cancel()
	<-r.done
	if r.file != nil {
		return r.file.Close()
	}
	return nil
}
