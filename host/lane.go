package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/hls"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/xrt"
)

// deviceLane is one device with its kernel, one reusable run and its
// buffer objects: two P2P chunk buffers (double buffering) and one
// targets/results pair. All are allocated once at Open.
type deviceLane struct {
	index   int
	s       *Sampler
	dev     xrt.Device
	kernel  xrt.Kernel
	run_    xrt.Run
	chunk   [2]xrt.BO
	targets xrt.BO
	result  xrt.BO
	tmap    []byte
	rmap    []byte
	mt      int
	// rwords is the result buffer's int32 words: what a copy-all launch
	// divides between its status, counts, neighbors and edge indices.
	rwords  int
	timeout time.Duration
	res     [2]int // chunk held by each chunk buffer, -1 for none
	// opened is the bytes read into each chunk buffer by Open's probe
	// and not yet counted in any layer's statistics.
	opened [2]int64
	// reread is host memory, page-aligned for O_DIRECT, into which
	// checkReread reads each chunk again (nil otherwise).
	reread []byte
	// imported are the chunk cache's entries as buffers of this device
	// (xrt.HostBuffers), by entry id, imported when first run over.
	imported map[int]xrt.BO
}

func openLane(i int, opts Options, s *Sampler, chunkBytes, mt int) (_ *deviceLane, err error) {
	l := &deviceLane{index: i, s: s, mt: mt, timeout: opts.RunTimeout, res: [2]int{-1, -1}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	switch opts.Backend {
	case BackendEmu:
		l.dev, err = xrt.OpenEmulated(i, opts.Emulator)
	case BackendXRT:
		l.dev, err = xrt.Open(i)
	default:
		return nil, fmt.Errorf("host: %w: backend %q (want %q or %q)", ErrInvalid, opts.Backend, BackendEmu, BackendXRT)
	}
	if err != nil {
		return nil, fmt.Errorf("host: device %d: %w", i, err)
	}
	wrap := func(what string, err error) error {
		return fmt.Errorf("host: %s: %s: %w", l.name(), what, err)
	}
	uuid, err := l.dev.LoadXclbin(opts.Xclbin)
	if err != nil {
		return nil, wrap("load xclbin", err)
	}
	if l.kernel, err = l.dev.OpenKernel(uuid, xrt.SampleKernel); err != nil {
		return nil, wrap("open kernel", err)
	}
	alloc := func(arg, size int, flags xrt.BOFlags) (xrt.BO, error) {
		g, err := l.kernel.GroupID(arg)
		if err != nil {
			return nil, wrap(fmt.Sprintf("group of argument %d", arg), err)
		}
		bo, err := l.dev.AllocBO(size, flags, g)
		if err != nil {
			return nil, wrap(fmt.Sprintf("allocate %d-byte buffer for argument %d", size, arg), err)
		}
		return bo, nil
	}
	// With the chunk cache (chunkBytes 0) the kernel runs over the
	// cache's entries instead: no chunk buffers of the lane's own.
	for b := range l.chunk {
		if chunkBytes == 0 {
			break
		}
		if l.chunk[b], err = alloc(xrt.ArgChunk, chunkBytes, xrt.BOP2P); err != nil {
			return nil, err
		}
	}
	// Twice the targets: a walk step's walk ids follow its nodes.
	if l.targets, err = alloc(xrt.ArgTargets, 8*mt, xrt.BONormal); err != nil {
		return nil, err
	}
	// With edge ids the kernel writes as many edge indices after the
	// samples (argument 7): the result buffer is twice as large. The
	// copy-all mode (full layers) takes the same buffer for a status word
	// pair, a count per target and mt·MaxFanout neighbors (and their edge
	// indices): room for the counts is added, so that a launch of mt
	// targets still has room for at least that many neighbors.
	l.rwords = mt*opts.MaxFanout*resultWords(opts.EdgeIDs) + mt + hls.AllStatusWords
	if l.result, err = alloc(xrt.ArgResult, 4*l.rwords, xrt.BONormal); err != nil {
		return nil, err
	}
	if l.tmap, err = l.targets.Map(); err != nil {
		return nil, wrap("map targets buffer", err)
	}
	if l.rmap, err = l.result.Map(); err != nil {
		return nil, wrap("map result buffer", err)
	}
	if s.check == checkReread && chunkBytes > 0 {
		l.reread = alignedBuffer(chunkBytes, ioAlign)
	}
	if l.run_, err = l.kernel.NewRun(); err != nil {
		return nil, wrap("new run", err)
	}
	for _, a := range []struct {
		i  int
		bo xrt.BO
	}{{xrt.ArgResult, l.result}, {xrt.ArgTargets, l.targets}} {
		if err := l.run_.SetBO(a.i, a.bo); err != nil {
			return nil, wrap(fmt.Sprintf("set argument %d", a.i), err)
		}
	}
	return l, nil
}

func (l *deviceLane) name() string {
	if l.dev != nil {
		return fmt.Sprintf("device %d (%s)", l.index, l.dev.Name())
	}
	return fmt.Sprintf("device %d", l.index)
}

func (l *deviceLane) maxTargets() int { return l.mt }

func (l *deviceLane) bytes() int64 {
	var n int64
	for _, b := range []xrt.BO{l.chunk[0], l.chunk[1], l.targets, l.result} {
		if b != nil {
			n += int64(b.Size())
		}
	}
	return n
}

// load P2P-reads chunk c (BytesUsed rounded up to a page) into slot and
// checks its CRC-32C (Sampler.check) before the kernel may use it. It runs
// in the lane's reader goroutine, so the check overlaps the kernel's work
// on the other buffer. A chunk that fails is not resident: the slot holds
// no chunk afterwards.
func (l *deviceLane) load(slot, c int) (int64, error) {
	n := l.s.readSize(c)
	off := l.s.manifest.ChunkOffset(c)
	l.res[slot] = -1
	if l.s.check == checkBuffer {
		crc, err := l.readSummed(slot, off, n)
		if err != nil {
			return 0, err
		}
		if err := l.s.manifest.CheckChunkSum(l.s.file.Name(), c, crc, n); err != nil {
			return 0, err
		}
		l.res[slot] = c
		return n, nil
	}
	if err := xrt.ReadP2P(l.s.file, l.chunk[slot], 0, off, int(n)); err != nil {
		return 0, err
	}
	var b []byte
	switch l.s.check {
	case checkReread:
		b = l.reread[:n]
		if _, err := l.s.file.ReadAt(b, off); err != nil {
			return 0, fmt.Errorf("re-read of chunk %d (%d bytes at %d) to check it: %w", c, n, off, err)
		}
	}
	if b != nil {
		if err := l.s.manifest.CheckChunk(l.s.file.Name(), c, b); err != nil {
			return 0, err
		}
	}
	l.res[slot] = c
	return n, nil
}

// readPiece is the unit in which readPieces reads a chunk (a multiple of
// xrt.P2PBufferAlign and xrt.P2PBlock).
const readPiece = 16 << 20

// readSummed P2P-reads the n bytes of the file at off into slot's chunk
// buffer and returns their CRC-32C (readPieces).
func (l *deviceLane) readSummed(slot int, off, n int64) (uint32, error) {
	m, err := l.chunk[slot].Map()
	if err != nil {
		return 0, fmt.Errorf("map chunk buffer to check it: %w", err)
	}
	return readPieces(n, func(lo, size int64) ([]byte, error) {
		if err := xrt.ReadP2P(l.s.file, l.chunk[slot], int(lo), off+lo, int(size)); err != nil {
			return nil, err
		}
		return m[lo : lo+size], nil
	})
}

// readEntry reads chunk c into buf (page-aligned, as the file may be
// open with O_DIRECT, with room for readSize(c) bytes) as a lane reads it
// into a device buffer: in pieces read in parallel, each checksummed as it
// lands (readPieces), then the chunk checked against the manifest's
// CRC-32C (not with the benchmarks' skipChecksum). It returns the bytes
// read. The chunk cache's entries are filled with it: a cached chunk was
// checked when it was read, and is not checked again when a later pass
// samples it.
func (s *Sampler) readEntry(c int, buf []byte) (int64, error) {
	return s.readChunk(c, buf, s.check != checkNone)
}

// readHost reads chunk c into host memory (as readEntry, always checked)
// and returns its bytes: buf[:readSize(c)]. The streaming walker's
// membership passes read with it: the kernel has no membership mode, so
// node2vec's neighbor tests search the previous nodes' chunks on the host.
func (s *Sampler) readHost(c int, buf []byte) ([]byte, error) {
	n, err := s.readChunk(c, buf, true)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// readChunk is readEntry, checking the CRC-32C when check is set.
func (s *Sampler) readChunk(c int, buf []byte, check bool) (int64, error) {
	n, off := s.readSize(c), s.manifest.ChunkOffset(c)
	if int64(len(buf)) < n {
		return 0, fmt.Errorf("chunk %d: %d bytes do not fit a %d-byte buffer", c, n, len(buf))
	}
	buf = buf[:n]
	crc, err := readPieces(n, func(lo, size int64) ([]byte, error) {
		b := buf[lo : lo+size]
		if _, err := s.file.ReadAt(b, off+lo); err != nil {
			return nil, err
		}
		return b, nil
	})
	if err != nil {
		return 0, err
	}
	if check {
		if err := s.manifest.CheckChunkSum(s.file.Name(), c, crc, n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// readPieces reads n bytes with read(lo, size), which reads bytes
// [lo, lo+size) of them and returns them, and returns their CRC-32C. It
// reads in pieces, on as many goroutines as there are cores (at most one
// per piece), each of which checksums a piece as soon as it has read it:
// the check overlaps the reading instead of following it on one core, and
// the disk sees more than one request at a time. The checksum is that of
// one read of the whole range.
func readPieces(n int64, read func(lo, size int64) ([]byte, error)) (uint32, error) {
	pieces := int((n + readPiece - 1) / readPiece)
	crcs := make([]uint32, pieces)
	errs := make([]error, pieces)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(pieces, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < pieces; k = int(next.Add(1) - 1) {
				lo := int64(k) * readPiece
				b, err := read(lo, min(readPiece, n-lo))
				if errs[k] = err; err != nil {
					return
				}
				crcs[k] = crc32c.Checksum(b)
			}
		}()
	}
	wg.Wait()
	var crc uint32
	for k, e := range errs {
		if e != nil {
			return 0, e
		}
		crc = crc32c.Combine(crc, crcs[k], min(readPiece, n-int64(k)*readPiece))
	}
	return crc, nil
}

// alignedBuffer returns n bytes of host memory starting at a multiple of
// align, as O_DIRECT reads need.
func alignedBuffer(n, align int) []byte {
	b := make([]byte, n+align)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align)); r != 0 {
		skip = align - r
	}
	return b[skip : skip+n : skip+n]
}

func (l *deviceLane) resident(slot int) int { return l.res[slot] }

func (l *deviceLane) takeOpenRead(slot int) int64 {
	n := l.opened[slot]
	l.opened[slot] = 0
	return n
}

// resultWords is the result buffer's words per sample slot: 1, or 2 with
// edge ids.
func resultWords(edgeIDs bool) int {
	if edgeIDs {
		return 2
	}
	return 1
}

// run launches the kernel once over la's targets, all inside the chunk in
// slot; with la.Edges (as long as la.Out) it asks for and reads back the
// chunk-local edge indices too; with la.Walks, a walk step (argument 8
// holds the first attempt + 1, the targets buffer the walk ids after the
// nodes).
func (l *deviceLane) run(slot int, la launch) (kernel, syncT time.Duration, err error) {
	return l.runBO(l.chunk[slot], la)
}

// runEntry is run over the chunk cache's entry e: the device reads the
// entry's host memory through a host-only buffer over it (imported once
// per entry, xrt.HostBuffers), so a cached chunk is never copied.
func (l *deviceLane) runEntry(e *cacheEntry, la launch) (kernel, syncT time.Duration, err error) {
	bo, ok := l.imported[e.id]
	if !ok {
		hb, can := l.dev.(xrt.HostBuffers)
		if !can {
			return 0, 0, fmt.Errorf("%s cannot read host memory (chunk cache entry %d)", l.dev.Name(), e.id)
		}
		g, err := l.kernel.GroupID(xrt.ArgChunk)
		if err != nil {
			return 0, 0, fmt.Errorf("group of argument %d: %w", xrt.ArgChunk, err)
		}
		if bo, err = hb.ImportHost(e.mem, g); err != nil {
			return 0, 0, err
		}
		if l.imported == nil {
			l.imported = map[int]xrt.BO{}
		}
		l.imported[e.id] = bo
	}
	return l.runBO(bo, la)
}

// allCapacity is the neighbors a copy-all launch of nt targets has room
// for in the result buffer (after the status and the counts; with edge
// indices, half of what is left), at most what the kernel's int32 counts
// can say.
func (l *deviceLane) allCapacity(nt int, edges bool) int {
	return min((l.rwords-hls.AllStatusWords-nt)/resultWords(edges), math.MaxInt32)
}

// kernelArgs are one launch's scalar kernel arguments (xrt.Arg*).
type kernelArgs struct {
	nt                   int
	fanout               uint32
	key                  uint64
	replace, edges, walk uint32
}

// launchKernel sets a launch's arguments over the chunk in buffer chunk,
// starts the kernel and waits for it (a kernel past the lane's timeout
// cannot be aborted: it is waited out, so that its buffers are not reused
// under it). It returns when the kernel started and when it ended (or
// the failure: t1 is t0 where the arguments or the start failed).
func (l *deviceLane) launchKernel(t0 time.Time, chunk xrt.BO, a kernelArgs) (t1, t2 time.Time, err error) {
	r := l.run_
	for _, e := range []error{
		r.SetBO(xrt.ArgChunk, chunk),
		r.SetUint32(xrt.ArgNTargets, uint32(a.nt)),
		r.SetUint32(xrt.ArgFanout, a.fanout),
		r.SetUint64(xrt.ArgKey, a.key),
		r.SetUint32(xrt.ArgReplace, a.replace),
		r.SetUint32(xrt.ArgEdges, a.edges),
		r.SetUint32(xrt.ArgWalk, a.walk),
	} {
		if e != nil {
			return t0, t0, fmt.Errorf("set kernel arguments: %w", e)
		}
	}
	t1 = time.Now()
	if err := r.Start(); err != nil {
		return t1, t1, fmt.Errorf("start: %w", err)
	}
	if _, err := r.Wait(l.timeout); err != nil {
		if errors.Is(err, xrt.ErrTimeout) {
			r.Wait(0)
		}
		return t1, time.Now(), fmt.Errorf("kernel: %w", err)
	}
	return t1, time.Now(), nil
}

// runAllBO runs a copy-all launch (la.All) over the chunk in buffer
// chunk: the targets go up, the kernel copies their neighbors from
// la.Skip on until the result buffer's capacity is used, and only what it
// wrote comes back: first the status and the counts, checked
// (hls.ParseAllStatus), then the neighbors (and edge indices) they say
// were written.
func (l *deviceLane) runAllBO(chunk xrt.BO, la launch) (kernel, syncT time.Duration, err error) {
	t0 := time.Now()
	nt := len(la.Targets)
	putWords(l.tmap[:4*nt], la.Targets)
	if err := l.targets.Sync(xrt.ToDevice, 4*nt, 0); err != nil {
		return 0, 0, fmt.Errorf("sync targets: %w", err)
	}
	capacity := l.allCapacity(nt, la.AllEdges)
	if capacity < 1 {
		return 0, 0, fmt.Errorf("copy-all launch of %d targets: no room in a result buffer of %d words", nt, l.rwords)
	}
	ed := uint32(0)
	if la.AllEdges {
		ed = 1
	}
	t1, t2, err := l.launchKernel(t0, chunk, kernelArgs{nt: nt, fanout: hls.FanoutAll, key: hls.AllKey(capacity, la.Skip), edges: ed})
	if err != nil {
		return t2.Sub(t1), t1.Sub(t0), err
	}
	out := la.All
	hdr := hls.AllStatusWords + nt
	if err := l.result.Sync(xrt.FromDevice, 4*hdr, 0); err != nil {
		return t2.Sub(t1), t1.Sub(t0), fmt.Errorf("sync copy-all status: %w", err)
	}
	var status [hls.AllStatusWords]int32
	getInt32s(status[:], l.rmap[:4*hls.AllStatusWords])
	out.Counts = slices.Grow(out.Counts[:0], nt)[:nt]
	getInt32s(out.Counts, l.rmap[4*hls.AllStatusWords:4*hdr])
	p, err := hls.ParseAllStatus(status[:], out.Counts, capacity)
	if err != nil {
		return t2.Sub(t1), t1.Sub(t0) + time.Since(t2), err
	}
	out.Progress = p
	w := p.Words
	out.Samples = slices.Grow(out.Samples[:0], w)[:w]
	if w > 0 {
		if err := l.result.Sync(xrt.FromDevice, 4*w, 4*hdr); err != nil {
			return t2.Sub(t1), t1.Sub(t0), fmt.Errorf("sync copy-all neighbors: %w", err)
		}
		getInt32s(out.Samples, l.rmap[4*hdr:4*(hdr+w)])
	}
	if la.AllEdges {
		out.Edges = slices.Grow(out.Edges[:0], w)[:w]
		if w > 0 {
			eo := hdr + capacity
			if err := l.result.Sync(xrt.FromDevice, 4*w, 4*eo); err != nil {
				return t2.Sub(t1), t1.Sub(t0), fmt.Errorf("sync copy-all edge indices: %w", err)
			}
			getInt32s(out.Edges, l.rmap[4*eo:4*(eo+w)])
		}
	}
	return t2.Sub(t1), t1.Sub(t0) + time.Since(t2), nil
}

// runBO is run over the chunk in buffer chunk.
func (l *deviceLane) runBO(chunk xrt.BO, la launch) (kernel, syncT time.Duration, err error) {
	if la.All != nil {
		return l.runAllBO(chunk, la)
	}
	t0 := time.Now()
	targets, out, edges := la.Targets, la.Out, la.Edges
	nt := len(targets)
	words := nt
	putWords(l.tmap[:4*nt], targets)
	walk := uint32(0)
	if la.Walks != nil {
		putWords(l.tmap[4*nt:8*nt], la.Walks)
		words, walk = 2*nt, la.Attempt0+1
	}
	if err := l.targets.Sync(xrt.ToDevice, 4*words, 0); err != nil {
		return 0, 0, fmt.Errorf("sync targets: %w", err)
	}
	rep, ed := uint32(0), uint32(0)
	if la.Replace {
		rep = 1
	}
	if edges != nil {
		ed = 1
	}
	t1, t2, err := l.launchKernel(t0, chunk, kernelArgs{nt: nt, fanout: uint32(la.Fanout), key: la.Key, replace: rep, edges: ed, walk: walk})
	if err != nil {
		return t2.Sub(t1), t1.Sub(t0), err
	}
	nr := 4 * len(out)
	if err := l.result.Sync(xrt.FromDevice, nr*int(1+ed), 0); err != nil {
		return t2.Sub(t1), t1.Sub(t0), fmt.Errorf("sync results: %w", err)
	}
	getInt32s(out, l.rmap[:nr])
	if edges != nil {
		getInt32s(edges, l.rmap[nr:2*nr])
	}
	return t2.Sub(t1), t1.Sub(t0) + time.Since(t2), nil
}

func (l *deviceLane) close() error {
	var errs []error
	if l.run_ != nil {
		errs = append(errs, l.run_.Close())
	}
	for _, b := range l.imported {
		errs = append(errs, b.Free())
	}
	for _, b := range []xrt.BO{l.chunk[0], l.chunk[1], l.targets, l.result} {
		if b != nil {
			errs = append(errs, b.Free())
		}
	}
	if l.kernel != nil {
		errs = append(errs, l.kernel.Close())
	}
	if l.dev != nil {
		errs = append(errs, l.dev.Close())
	}
	*l = deviceLane{index: l.index, res: [2]int{-1, -1}}
	return errors.Join(errs...)
}

// putWords stores w in the device buffer dst as little-endian words: a
// plain copy where the host order is that.
func putWords(dst []byte, w []uint32) {
	if hostorder.LittleEndian {
		copy(dst, hostorder.Bytes(w))
		return
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

// getInt32s loads the little-endian words of the device buffer src.
func getInt32s(dst []int32, src []byte) {
	if hostorder.LittleEndian {
		copy(hostorder.Bytes(dst), src)
		return
	}
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(src[4*i:]))
	}
}
