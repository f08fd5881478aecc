//go:build cgo && linux

package gpu

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "streamsampler_gpu.h"

// The library's functions, resolved with dlsym. cgo cannot call C function
// pointers, so each has a thin wrapper below.
typedef struct {
	void *h;
	int (*abi_version)(void);
	int (*device_count)(int *, char *, size_t);
	int (*create)(int, uint32_t, const uint64_t *, uint64_t, const uint32_t *, const ssg_options *, ssg_ctx **, char *, size_t);
	int (*create_empty)(int, uint32_t, uint64_t, const ssg_options *, ssg_ctx **, char *, size_t);
	int (*load_indices)(ssg_ctx *, uint64_t, const uint32_t *, uint64_t, char *, size_t);
	int (*load_indptr)(ssg_ctx *, const uint64_t *, uint64_t, char *, size_t);
	void (*destroy)(ssg_ctx *);
	int (*info)(ssg_ctx *, char *, size_t, int32_t *, char *, size_t);
	int (*sample)(ssg_ctx *, int32_t, const uint32_t *, uint64_t, const int32_t *, int32_t, uint64_t, uint32_t, int32_t, uint64_t *, uint64_t, char *, size_t);
	int (*sample_keyed)(ssg_ctx *, int32_t, const uint32_t *, uint64_t, const int32_t *, int32_t, const uint64_t *, int32_t, uint64_t *, uint64_t, char *, size_t);
	int (*fetch)(ssg_ctx *, uint32_t *, uint64_t, int32_t *, uint64_t, uint32_t *, uint64_t, char *, size_t);
	int (*fetch_edges)(ssg_ctx *, int64_t *, uint64_t, char *, size_t);
	int (*layer_sizes)(ssg_ctx *, uint64_t *, uint64_t, char *, size_t);
	int (*fetch_offsets)(ssg_ctx *, int64_t *, uint64_t, char *, size_t);
	int (*timings)(ssg_ctx *, double *, int);
	int (*walk)(ssg_ctx *, int32_t, const uint32_t *, uint64_t, uint32_t, uint32_t, uint64_t, uint64_t, int32_t,
	            uint64_t, uint64_t, uint64_t, int32_t *, uint64_t, char *, size_t);
} ssg_lib;

// ssg_dlopen opens path and, on failure, copies dlerror's message into
// err in the same C call: dlerror's state is per OS thread, and Go may move
// the goroutine to another thread between two cgo calls.
static void *ssg_dlopen(const char *path, char *err, size_t n) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e ? e : "unknown dlopen error");
	}
	return h;
}

// ssg_resolve fills l from handle h; it returns the name of the first
// missing symbol, or NULL.
static const char *ssg_resolve(void *h, ssg_lib *l) {
	l->h = h;
#define SSG_SYM(field, name) \
	if (!(*(void **)(&l->field) = dlsym(h, name))) return name;
	SSG_SYM(abi_version, "ssg_abi_version")
	SSG_SYM(device_count, "ssg_device_count")
	SSG_SYM(create, "ssg_create")
	SSG_SYM(create_empty, "ssg_create_empty")
	SSG_SYM(load_indices, "ssg_load_indices")
	SSG_SYM(load_indptr, "ssg_load_indptr")
	SSG_SYM(destroy, "ssg_destroy")
	SSG_SYM(info, "ssg_info")
	SSG_SYM(sample, "ssg_sample")
	SSG_SYM(sample_keyed, "ssg_sample_keyed")
	SSG_SYM(fetch, "ssg_fetch")
	SSG_SYM(fetch_edges, "ssg_fetch_edges")
	SSG_SYM(layer_sizes, "ssg_layer_sizes")
	SSG_SYM(fetch_offsets, "ssg_fetch_offsets")
	SSG_SYM(timings, "ssg_last_timings")
	SSG_SYM(walk, "ssg_walk")
#undef SSG_SYM
	return NULL;
}

static int w_abi_version(ssg_lib *l) { return l->abi_version(); }
static int w_device_count(ssg_lib *l, int *n, char *err, size_t len) { return l->device_count(n, err, len); }
static int w_create(ssg_lib *l, int dev, uint32_t n, const uint64_t *indptr, uint64_t nnz, const uint32_t *indices,
                    const ssg_options *o, ssg_ctx **out, char *err, size_t len) {
	return l->create(dev, n, indptr, nnz, indices, o, out, err, len);
}
static int w_create_empty(ssg_lib *l, int dev, uint32_t n, uint64_t nnz, const ssg_options *o, ssg_ctx **out,
                          char *err, size_t len) {
	return l->create_empty(dev, n, nnz, o, out, err, len);
}
static int w_load_indices(ssg_lib *l, ssg_ctx *c, uint64_t first, const uint32_t *idx, uint64_t count, char *err,
                          size_t len) {
	return l->load_indices(c, first, idx, count, err, len);
}
static int w_load_indptr(ssg_lib *l, ssg_ctx *c, const uint64_t *p, uint64_t count, char *err, size_t len) {
	return l->load_indptr(c, p, count, err, len);
}
static void w_destroy(ssg_lib *l, ssg_ctx *c) { l->destroy(c); }
static int w_info(ssg_lib *l, ssg_ctx *c, char *name, size_t nlen, int32_t *uva, char *err, size_t len) {
	return l->info(c, name, nlen, uva, err, len);
}
static int w_sample_keyed(ssg_lib *l, ssg_ctx *c, int32_t mode, const uint32_t *seeds, uint64_t ns, const int32_t *fan,
                          int32_t L, const uint64_t *keys, int32_t rep, uint64_t *counts, uint64_t ncounts, char *err, size_t len) {
	return l->sample_keyed(c, mode, seeds, ns, fan, L, keys, rep, counts, ncounts, err, len);
}
static int w_fetch(ssg_lib *l, ssg_ctx *c, uint32_t *f, uint64_t nf, int32_t *s, uint64_t ns, uint32_t *fin, uint64_t nfin,
                   char *err, size_t len) {
	return l->fetch(c, f, nf, s, ns, fin, nfin, err, len);
}
static int w_fetch_edges(ssg_lib *l, ssg_ctx *c, int64_t *e, uint64_t ne, char *err, size_t len) {
	return l->fetch_edges(c, e, ne, err, len);
}
static int w_layer_sizes(ssg_lib *l, ssg_ctx *c, uint64_t *s, uint64_t n, char *err, size_t len) {
	return l->layer_sizes(c, s, n, err, len);
}
static int w_fetch_offsets(ssg_lib *l, ssg_ctx *c, int64_t *o, uint64_t n, char *err, size_t len) {
	return l->fetch_offsets(c, o, n, err, len);
}
static int w_timings(ssg_lib *l, ssg_ctx *c, double *out, int n) { return l->timings(c, out, n); }
static int w_walk(ssg_lib *l, ssg_ctx *c, int32_t mode, const uint32_t *starts, uint64_t ns, uint32_t r, uint32_t len_,
                  uint64_t seed, uint64_t restart, int32_t stop, uint64_t tr, uint64_t tn, uint64_t tf, int32_t *out,
                  uint64_t cap, char *err, size_t len) {
	return l->walk(c, mode, starts, ns, r, len_, seed, restart, stop, tr, tn, tf, out, cap, err, len);
}
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

const errLen = 1024

// abiVersion is the SSG_ABI_VERSION this package was built against: a
// library of another version is refused.
const abiVersion = C.SSG_ABI_VERSION

// statusCodes ties each failure status of streamsampler_gpu.h, where the
// codes are defined (cgo reads them from there), to the error that callers
// branch on. The name is the C enumerator's, for the test that reads the
// header and checks that every code is here under its name.
var statusCodes = []struct {
	name     string
	code     int
	sentinel error
}{
	{"SSG_ERR_CUDA", C.SSG_ERR_CUDA, ErrCUDA},
	{"SSG_ERR_NO_DEVICE", C.SSG_ERR_NO_DEVICE, ErrNoDevice},
	{"SSG_ERR_OUT_OF_MEMORY", C.SSG_ERR_OUT_OF_MEMORY, ErrOutOfMemory},
	{"SSG_ERR_INVALID", C.SSG_ERR_INVALID, ErrInvalid},
	{"SSG_ERR_TIMEOUT", C.SSG_ERR_TIMEOUT, ErrTimeout},
	// The context refuses calls after an earlier timeout or sticky CUDA
	// error; the message carries that error.
	{"SSG_ERR_BROKEN", C.SSG_ERR_BROKEN, ErrCUDA},
}

// statusError turns a status and the library's message into an error
// wrapping the status's sentinel (ErrCUDA for a code this build does not
// know); SSG_OK is nil.
func statusError(code int, msg string) error {
	if code == C.SSG_OK {
		return nil
	}
	s := ErrCUDA
	for _, sc := range statusCodes {
		if sc.code == code {
			s = sc.sentinel
			break
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("status %d", code)
	}
	return &libError{sentinel: s, msg: msg}
}

// library is a loaded libstreamsampler_gpu.so. Libraries are never
// unloaded: CUDA's runtime does not survive dlclose well, and a process
// loads one.
type library struct {
	path string
	l    *C.ssg_lib
}

var (
	libMu     sync.Mutex
	libLoaded = map[string]*library{}
)

// loadLibrary finds and opens the library (see searchPaths) and checks
// its symbols and ABI version.
func loadLibrary(libPath string) (*library, error) {
	libMu.Lock()
	defer libMu.Unlock()
	tried := searchPaths(libPath)
	reasons := make([]string, len(tried))
	for i, p := range tried {
		if lib, ok := libLoaded[p]; ok {
			return lib, nil
		}
		bare := !strings.Contains(p, "/")
		if !bare {
			if _, err := os.Stat(p); err != nil {
				reasons[i] = "no such file"
				if !os.IsNotExist(err) {
					reasons[i] = err.Error()
				}
				continue
			}
		}
		cp := C.CString(p)
		eb := (*C.char)(C.calloc(errLen, 1))
		h := C.ssg_dlopen(cp, eb, errLen)
		msg := C.GoString(eb)
		C.free(unsafe.Pointer(cp))
		C.free(unsafe.Pointer(eb))
		if h == nil {
			if bare {
				reasons[i] = "not on the system library path"
				if !strings.Contains(msg, "cannot open shared object file") {
					reasons[i] = msg
				}
				continue
			}
			// The file exists but cannot be loaded: say so, not "not found".
			return nil, fmt.Errorf("%w: dlopen %s: %s: rebuild it with `make gpu` on a CUDA machine", ErrLibraryInvalid, p, msg)
		}
		l := (*C.ssg_lib)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ssg_lib{}))))
		if missing := C.ssg_resolve(h, l); missing != nil {
			name := C.GoString(missing)
			C.free(unsafe.Pointer(l))
			C.dlclose(h)
			return nil, fmt.Errorf("%w: %s lacks symbol %s: it is not a streamsampler GPU library, or an old one; rebuild it with `make gpu`", ErrLibraryInvalid, p, name)
		}
		if v := int(C.w_abi_version(l)); v != abiVersion {
			C.free(unsafe.Pointer(l))
			C.dlclose(h)
			return nil, fmt.Errorf("%w: %s has ABI version %d, this program needs %d: rebuild it with `make gpu`", ErrLibraryInvalid, p, v, abiVersion)
		}
		lib := &library{path: p, l: l}
		libLoaded[p] = lib
		return lib, nil
	}
	return nil, notFound(tried, reasons)
}

// deviceCheck fails with ErrNoDevice unless `device` exists.
func (lib *library) deviceCheck(device int) error {
	var n C.int
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	if rc := C.w_device_count(lib.l, &n, errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(errBuf))
	}
	if device < 0 || device >= int(n) {
		return &libError{sentinel: ErrNoDevice, msg: fmt.Sprintf("no CUDA device %d: cudaGetDeviceCount returned %d device(s)", device, int(n))}
	}
	return nil
}

func (lib *library) open(device int, indptr []uint64, indices []uint32, o Options) (*Backend, error) {
	copt := cOptions(o)
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	var ip *C.uint32_t
	if len(indices) > 0 {
		ip = (*C.uint32_t)(unsafe.Pointer(&indices[0]))
	}
	var ctx *C.ssg_ctx
	n := len(indptr) - 1
	rc := C.w_create(lib.l, C.int(device), C.uint32_t(n), (*C.uint64_t)(unsafe.Pointer(&indptr[0])),
		C.uint64_t(len(indices)), ip, &copt, &ctx, errBuf, errLen)
	if rc != C.SSG_OK {
		return nil, statusError(int(rc), C.GoString(errBuf))
	}
	return lib.backend(ctx, uint32(n), o), nil
}

// openStream creates a context for a graph of numNodes nodes and numEdges
// edges and has fill pass it the CSR piece by piece (ssg_load_indices,
// ssg_load_indptr); a failure frees the context.
func (lib *library) openStream(device int, numNodes uint32, numEdges uint64, o Options, fill func(CSRSink) error) (*Backend, error) {
	copt := cOptions(o)
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	var ctx *C.ssg_ctx
	rc := C.w_create_empty(lib.l, C.int(device), C.uint32_t(numNodes), C.uint64_t(numEdges), &copt, &ctx, errBuf, errLen)
	if rc != C.SSG_OK {
		return nil, statusError(int(rc), C.GoString(errBuf))
	}
	if err := fill(&cSink{l: lib.l, ctx: ctx, errBuf: errBuf}); err != nil {
		C.w_destroy(lib.l, ctx)
		return nil, err
	}
	return lib.backend(ctx, numNodes, o), nil
}

// backend wraps a loaded context.
func (lib *library) backend(ctx *C.ssg_ctx, n uint32, o Options) *Backend {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	name := (*C.char)(C.calloc(256, 1))
	defer C.free(unsafe.Pointer(name))
	var uva C.int32_t
	C.w_info(lib.l, ctx, name, 256, &uva, errBuf, errLen)
	return &Backend{
		eng:      &cEngine{l: lib.l, ctx: ctx},
		numNodes: n,
		opts:     o,
		device:   C.GoString(name),
		uva:      uva != 0,
		libPath:  lib.path,
	}
}

// cSink is a context being loaded: the CSRSink of openStream.
type cSink struct {
	l      *C.ssg_lib
	ctx    *C.ssg_ctx
	errBuf *C.char
}

// Indices passes a to ssg_load_indices. a may be memory-mapped (not Go
// memory) or a Go slice of plain words; the library copies or stages it
// before returning.
func (s *cSink) Indices(first uint64, a []uint32) error {
	if len(a) == 0 {
		return nil
	}
	if rc := C.w_load_indices(s.l, s.ctx, C.uint64_t(first), (*C.uint32_t)(unsafe.Pointer(&a[0])), C.uint64_t(len(a)),
		s.errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(s.errBuf))
	}
	return nil
}

// Indptr passes indptr to ssg_load_indptr, which completes the graph.
func (s *cSink) Indptr(indptr []uint64) error {
	if rc := C.w_load_indptr(s.l, s.ctx, (*C.uint64_t)(unsafe.Pointer(&indptr[0])), C.uint64_t(len(indptr)),
		s.errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(s.errBuf))
	}
	return nil
}

// cOptions is o as the library's ssg_options.
func cOptions(o Options) C.ssg_options {
	var copt C.ssg_options
	if o.UVA {
		copt.uva = 1
	}
	copt.block_size = C.int32_t(o.BlockSize)
	copt.fetch_size = C.int32_t(o.FetchSize)
	copt.group_size = C.int32_t(o.GroupSize)
	copt.blocks_per_sm = C.int32_t(o.BlocksPerSM)
	copt.timeout_ms = C.int32_t(o.Timeout.Milliseconds())
	if o.EdgeIDs {
		copt.edge_ids = 1
	}
	return copt
}

// cEngine is one ssg_ctx.
type cEngine struct {
	l   *C.ssg_lib
	ctx *C.ssg_ctx
}

func (e *cEngine) sample(mode Mode, seeds []uint32, fanouts []int32, keys []uint64, replace bool) ([]uint64, error) {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	counts := make([]uint64, len(fanouts)+1)
	var sp *C.uint32_t
	if len(seeds) > 0 {
		sp = (*C.uint32_t)(unsafe.Pointer(&seeds[0]))
	}
	var rep C.int32_t
	if replace {
		rep = 1
	}
	rc := C.w_sample_keyed(e.l, e.ctx, C.int32_t(mode), sp, C.uint64_t(len(seeds)),
		(*C.int32_t)(unsafe.Pointer(&fanouts[0])), C.int32_t(len(fanouts)), (*C.uint64_t)(unsafe.Pointer(&keys[0])), rep,
		(*C.uint64_t)(unsafe.Pointer(&counts[0])), C.uint64_t(len(counts)), errBuf, errLen)
	if rc != C.SSG_OK {
		return nil, statusError(int(rc), C.GoString(errBuf))
	}
	return counts, nil
}

func (e *cEngine) fetch(frontiers []uint32, samples []int32, final []uint32) error {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	var fp, finp *C.uint32_t
	var sp *C.int32_t
	if len(frontiers) > 0 {
		fp = (*C.uint32_t)(unsafe.Pointer(&frontiers[0]))
	}
	if len(samples) > 0 {
		sp = (*C.int32_t)(unsafe.Pointer(&samples[0]))
	}
	if len(final) > 0 {
		finp = (*C.uint32_t)(unsafe.Pointer(&final[0]))
	}
	// The capacities are the slices' lengths: the library refuses (rather
	// than overruns) a result that does not fit.
	if rc := C.w_fetch(e.l, e.ctx, fp, C.uint64_t(len(frontiers)), sp, C.uint64_t(len(samples)), finp,
		C.uint64_t(len(final)), errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(errBuf))
	}
	return nil
}

// fetchEdges copies the last result's edge ids (ssg_fetch_edges) into
// edgeIDs, whose length is the capacity the library checks.
func (e *cEngine) fetchEdges(edgeIDs []int64) error {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	var p *C.int64_t
	if len(edgeIDs) > 0 {
		p = (*C.int64_t)(unsafe.Pointer(&edgeIDs[0]))
	}
	if rc := C.w_fetch_edges(e.l, e.ctx, p, C.uint64_t(len(edgeIDs)), errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(errBuf))
	}
	return nil
}

// layerSizes returns the last result's sample words per layer
// (ssg_layer_sizes): a full layer's are the sum of its rows.
func (e *cEngine) layerSizes(layers int) ([]uint64, error) {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	sizes := make([]uint64, max(layers, 1))
	if rc := C.w_layer_sizes(e.l, e.ctx, (*C.uint64_t)(unsafe.Pointer(&sizes[0])), C.uint64_t(layers), errBuf, errLen); rc != C.SSG_OK {
		return nil, statusError(int(rc), C.GoString(errBuf))
	}
	return sizes[:layers], nil
}

// fetchOffsets copies the last result's full layers' row offsets
// (ssg_fetch_offsets) into offsets, whose length is the capacity the
// library checks.
func (e *cEngine) fetchOffsets(offsets []int64) error {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	var p *C.int64_t
	if len(offsets) > 0 {
		p = (*C.int64_t)(unsafe.Pointer(&offsets[0]))
	}
	if rc := C.w_fetch_offsets(e.l, e.ctx, p, C.uint64_t(len(offsets)), errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(errBuf))
	}
	return nil
}

// walk runs ssg_walk into out, whose length is the capacity the library
// checks.
func (e *cEngine) walk(req walkRequest, out []int32) error {
	errBuf := (*C.char)(C.calloc(errLen, 1))
	defer C.free(unsafe.Pointer(errBuf))
	var sp *C.uint32_t
	if len(req.starts) > 0 {
		sp = (*C.uint32_t)(unsafe.Pointer(&req.starts[0]))
	}
	var op *C.int32_t
	if len(out) > 0 {
		op = (*C.int32_t)(unsafe.Pointer(&out[0]))
	}
	var stop C.int32_t
	if req.stopAtRestart {
		stop = 1
	}
	if rc := C.w_walk(e.l, e.ctx, C.int32_t(req.mode), sp, C.uint64_t(len(req.starts)), C.uint32_t(req.walksPerNode),
		C.uint32_t(req.length), C.uint64_t(req.seed), C.uint64_t(req.restart), stop, C.uint64_t(req.node2vec.Return),
		C.uint64_t(req.node2vec.Near), C.uint64_t(req.node2vec.Far), op, C.uint64_t(len(out)), errBuf, errLen); rc != C.SSG_OK {
		return statusError(int(rc), C.GoString(errBuf))
	}
	return nil
}

func (e *cEngine) timings() [3]float64 {
	var t [3]C.double
	C.w_timings(e.l, e.ctx, &t[0], 3)
	return [3]float64{float64(t[0]), float64(t[1]), float64(t[2])}
}

func (e *cEngine) close() {
	if e.ctx != nil {
		C.w_destroy(e.l, e.ctx)
		e.ctx = nil
	}
}
