package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// npyHeader is what an .npy file's header says about its array.
type npyHeader struct {
	descr   string // the dtype descriptor as written, e.g. "<f4"
	width   int    // bytes per element: 4 or 8 (integer arrays only)
	signed  bool   // int32/int64 rather than uint32/uint64
	fortran bool
	shape   []int64
	size    int64 // header bytes, magic included: data starts here
}

var (
	npyDescrRe   = regexp.MustCompile(`['"]descr['"]\s*:\s*['"]([^'"]*)['"]`)
	npyFortranRe = regexp.MustCompile(`['"]fortran_order['"]\s*:\s*(True|False)`)
	npyShapeRe   = regexp.MustCompile(`['"]shape['"]\s*:\s*\(([^)]*)\)`)
)

// readNPYHeader parses the header of a NumPy .npy file of integers
// (int32, int64, uint32 or uint64: edges and node ids) from r, leaving r
// at the first data byte.
func readNPYHeader(r *bufio.Reader, name string) (*npyHeader, error) {
	h, err := readNPYHeaderAny(r, name)
	if err != nil {
		return nil, err
	}
	switch h.descr {
	case "<i4", "=i4", "|i4":
		h.width, h.signed = 4, true
	case "<i8", "=i8", "|i8":
		h.width, h.signed = 8, true
	case "<u4", "=u4", "|u4":
		h.width = 4
	case "<u8", "=u8", "|u8":
		h.width = 8
	default:
		return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: dtype %q is not supported: want little-endian int32, int64, uint32 or uint64", h.descr), Err: ErrFormat}
	}
	return h, nil
}

// readNPYHeaderAny parses the header of a NumPy .npy file (format
// versions 1.0, 2.0 and 3.0) from r, leaving r at the first data byte.
// The caller checks the dtype.
func readNPYHeaderAny(r *bufio.Reader, name string) (*npyHeader, error) {
	bad := func(format string, args ...any) error {
		return &InputError{File: name, Record: -1, Msg: "npy: " + fmt.Sprintf(format, args...), Err: ErrFormat}
	}
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, bad("truncated header")
	}
	if !bytes.Equal(pre[:6], magicNPY) {
		return nil, bad("not a .npy file (no \\x93NUMPY magic)")
	}
	var hlen, size int64
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, bad("truncated header")
		}
		hlen, size = int64(binary.LittleEndian.Uint16(b[:])), 10
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, bad("truncated header")
		}
		hlen, size = int64(binary.LittleEndian.Uint32(b[:])), 12
	default:
		return nil, bad("unknown format version %d.%d", pre[6], pre[7])
	}
	if hlen > 1<<20 {
		return nil, bad("header of %d bytes is implausibly large", hlen)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, bad("truncated header")
	}
	h := &npyHeader{size: size + hlen}
	dict := string(hb)
	m := npyDescrRe.FindStringSubmatch(dict)
	if m == nil {
		return nil, bad("header has no descr: %q", truncate(dict))
	}
	h.descr = m[1]
	if m := npyFortranRe.FindStringSubmatch(dict); m == nil {
		return nil, bad("header has no fortran_order")
	} else {
		h.fortran = m[1] == "True"
	}
	m = npyShapeRe.FindStringSubmatch(dict)
	if m == nil {
		return nil, bad("header has no shape")
	}
	for _, f := range strings.Split(m[1], ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.ParseInt(f, 10, 64)
		if err != nil || d < 0 {
			return nil, bad("bad shape (%s)", m[1])
		}
		h.shape = append(h.shape, d)
	}
	return h, nil
}

// edgeLayout interprets the shape of an edge array: the number of edges
// and whether sources and destinations are interleaved (src0 dst0 src1 …)
// or split (all sources, then all destinations). A (2, 2) array is taken as
// (2, E), PyG's edge_index convention.
func (h *npyHeader) edgeLayout(name string) (edges int64, split bool, err error) {
	if len(h.shape) == 2 {
		switch {
		case h.shape[0] == 2:
			return h.shape[1], !h.fortran, nil
		case h.shape[1] == 2:
			return h.shape[0], h.fortran, nil
		}
	}
	return 0, false, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: shape %v is not an edge array: want (2, E) or (E, 2)", h.shape), Err: ErrFormat}
}
