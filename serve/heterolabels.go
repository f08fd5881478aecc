package serve

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterosample"
)

// HeteroLabels are one node type's labels, read by local id
// (*featstore.Store, whose reads check the label pages' CRC-32Cs and
// num_classes, or NodeLabels).
type HeteroLabels interface {
	// ReadLabels copies the labels of ids, in order, into dst;
	// featstore.NoLabel (-1) marks a node without one.
	ReadLabels(ids []uint32, dst []int32) error
}

// NodeLabels are a node type's labels held in memory, one per local id
// (labels/<type>.npy, which from_pyg writes for a type with y and no x).
type NodeLabels []int32

// ReadLabels implements HeteroLabels.
func (l NodeLabels) ReadLabels(ids []uint32, dst []int32) error {
	if len(dst) < len(ids) {
		return fmt.Errorf("serve: ReadLabels: dst holds %d labels, want %d", len(dst), len(ids))
	}
	for i, v := range ids {
		if int64(v) >= int64(len(l)) {
			return fmt.Errorf("serve: label of node %d: the type has %d labels", v, len(l))
		}
		dst[i] = l[v]
	}
	return nil
}

// HeteroLabelsDir is the directory of the per-type label files, relative
// to a heterogeneous graph directory (docs/FORMAT.md, "Per-type splits
// and the Python import").
const HeteroLabelsDir = "labels"

// ErrLabelsFile is matched by the errors of a labels/<type>.npy that is
// not one label per node of its type.
var ErrLabelsFile = errors.New("serve: bad labels file")

// OpenHeteroLabels returns each node type's labels, in the schema's
// order (nil for a type without): its feature store's when stores[t] has
// labels, else labels/<type>.npy when dir holds one (ReadNodeLabelsNPY).
// The store's labels go first because from_pyg writes the .npy only for a
// type without a store. nil, nil when no type has labels.
func OpenHeteroLabels(dir string, s *heterosample.Schema, stores []*featstore.Store) ([]HeteroLabels, error) {
	out := make([]HeteroLabels, len(s.NodeTypes))
	found := false
	for t, nt := range s.NodeTypes {
		if stores != nil && stores[t] != nil && stores[t].HasLabels() {
			out[t], found = stores[t], true
			continue
		}
		path := filepath.Join(dir, HeteroLabelsDir, nt.Name+".npy")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		l, err := ReadNodeLabelsNPY(path, nt.Count)
		if err != nil {
			return nil, fmt.Errorf("serve: labels of node type %q: %w", nt.Name, err)
		}
		out[t], found = l, true
	}
	if !found {
		return nil, nil
	}
	return out, nil
}

var (
	npyDescr   = regexp.MustCompile(`['"]descr['"]\s*:\s*['"]([^'"]*)['"]`)
	npyFortran = regexp.MustCompile(`['"]fortran_order['"]\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`['"]shape['"]\s*:\s*\(([^)]*)\)`)
)

// ReadNodeLabelsNPY reads a node type's labels file: a NumPy .npy 1-D
// array of exactly count little-endian int64 (or int32) labels, each -1
// (none) or a class in 0..2³¹−1. Its length is what binds it to the
// graph: a file of another length is refused (ErrLabelsFile), naming it.
func ReadNodeLabelsNPY(path string, count uint32) (NodeLabels, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	defer f.Close()
	l, err := DecodeNodeLabelsNPY(bufio.NewReader(f), count)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// DecodeNodeLabelsNPY decodes ReadNodeLabelsNPY's format from r.
func DecodeNodeLabelsNPY(r io.Reader, count uint32) (NodeLabels, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrLabelsFile, fmt.Sprintf(format, args...))
	}
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil || !bytes.Equal(pre[:6], []byte("\x93NUMPY")) {
		return nil, bad("not a .npy file (no \\x93NUMPY magic)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return nil, bad("truncated header")
		}
		hlen = int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, bad("truncated header")
		}
		if n := binary.LittleEndian.Uint32(b[:]); n <= 1<<20 {
			hlen = int(n)
		} else {
			return nil, bad("header of %d bytes", n)
		}
	default:
		return nil, bad("format version %d.%d", pre[6], pre[7])
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, bad("truncated header")
	}
	dict := string(hb)
	m := npyDescr.FindStringSubmatch(dict)
	if m == nil {
		return nil, bad("header has no descr")
	}
	width := 0
	switch m[1] {
	case "<i8", "=i8":
		width = 8
	case "<i4", "=i4":
		width = 4
	default:
		return nil, bad("dtype %q, want int64 (or int32) labels", m[1])
	}
	if m := npyFortran.FindStringSubmatch(dict); m == nil {
		return nil, bad("header has no fortran_order")
	}
	m = npyShape.FindStringSubmatch(dict)
	if m == nil {
		return nil, bad("header has no shape")
	}
	var shape []int64
	for _, s := range strings.Split(m[1], ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		d, err := strconv.ParseInt(s, 10, 64)
		if err != nil || d < 0 {
			return nil, bad("shape (%s)", m[1])
		}
		shape = append(shape, d)
	}
	if len(shape) != 1 || shape[0] != int64(count) {
		return nil, bad("shape %v, want (%d,): one label per node of the type", shape, count)
	}
	out := make(NodeLabels, count)
	br := bufio.NewReader(r)
	var b [8]byte
	for i := range out {
		if _, err := io.ReadFull(br, b[:width]); err != nil {
			return nil, bad("truncated: %d of %d labels", i, count)
		}
		v := int64(int32(binary.LittleEndian.Uint32(b[:])))
		if width == 8 {
			v = int64(binary.LittleEndian.Uint64(b[:]))
		}
		if v < int64(featstore.NoLabel) || v > math.MaxInt32 {
			return nil, bad("label %d of node %d, want -1 (none) or 0..%d", v, i, math.MaxInt32)
		}
		out[i] = int32(v)
	}
	if n, _ := br.Read(b[:1]); n != 0 {
		return nil, bad("bytes after the %d labels", count)
	}
	return out, nil
}
