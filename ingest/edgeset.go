package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// EdgePairs is a training edge set as read from a file (link prediction,
// DESIGN §4 "Link epochs"): pair i is (Src[i], Dst[i]), with at most one
// kind of label (LabelsI64 where every label is an integer, else
// LabelsF32; both nil without labels).
type EdgePairs struct {
	Src, Dst  []uint32
	LabelsF32 []float32
	LabelsI64 []int64
}

// maxEdgePairs bounds what a header may promise before anything is read
// (positions in the training set are uint32).
const maxEdgePairs = math.MaxUint32

// ReadEdgePairs reads a training edge set: a NumPy .npy integer array
// (int32, int64, uint32 or uint64) of shape (2, E) (PyG's edge_label_index)
// or (E, 2), or text with one pair per line, `src dst [label]` separated by
// spaces, tabs or a comma (#/% comments and blank lines allowed); gzip or
// zstd compressed or not. Every node must be below numNodes; an error is
// an *InputError naming the file and the line (text) or the pair (npy),
// the node and what was expected. Text labels are integers (LabelsI64)
// unless one of them is not, then all are float32; a line has a label
// exactly when the first pair line has one.
func ReadEdgePairs(path string, numNodes uint32) (*EdgePairs, error) {
	s, err := openStream(path, path, nil, false)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return nil, err
		}
		return nil, fmt.Errorf("open training edges: %w", err)
	}
	defer s.Close()
	if head, _ := s.r.Peek(len(magicNPY)); bytes.Equal(head, magicNPY) || formatByName(path) == FormatNPY {
		return readEdgePairsNPY(s.r, path, numNodes)
	}
	return readEdgePairsText(s.r, path, numNodes)
}

func readEdgePairsText(r *bufio.Reader, name string, numNodes uint32) (*EdgePairs, error) {
	out := &EdgePairs{}
	var labels []string // kept as text until their kind is known
	withLabels := -1    // unknown until the first pair line
	var line int64
	for {
		b, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, &InputError{File: name, Line: line + 1, Msg: "line too long, expected `src dst [label]`", Err: ErrSyntax}
		}
		if err != nil && err != io.EOF {
			if ie, ok := err.(*InputError); ok {
				return nil, ie
			}
			return nil, &InputError{File: name, Record: -1, Msg: "read error: " + err.Error(), Err: err}
		}
		if len(b) == 0 && err == io.EOF {
			break
		}
		line++
		t := bytes.TrimSpace(b)
		if len(t) > 0 && t[0] != '#' && t[0] != '%' {
			f := bytes.FieldsFunc(t, func(c rune) bool { return c == ' ' || c == '\t' || c == ',' })
			if len(f) != 2 && len(f) != 3 {
				return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("found %q, expected `src dst [label]`", truncate(string(t))), Err: ErrSyntax}
			}
			if withLabels < 0 {
				withLabels = len(f) - 2
			} else if len(f)-2 != withLabels {
				return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("%d fields, expected %d as on the first pair's line", len(f), 2+withLabels), Err: ErrSyntax}
			}
			var ends [2]uint32
			for k := range 2 {
				v, perr := strconv.ParseUint(string(f[k]), 10, 64)
				switch {
				case perr != nil && errors.Is(perr, strconv.ErrRange) && isDigits(f[k]):
					return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("node %s is out of range: nodes must be below the graph's %d nodes", f[k], numNodes), Err: ErrIDRange}
				case perr != nil:
					return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("found %q, expected a non-negative integer node id", truncate(string(f[k]))), Err: ErrSyntax}
				case v >= uint64(numNodes):
					return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("node %d is out of range: nodes must be below the graph's %d nodes", v, numNodes), Err: ErrIDRange}
				}
				ends[k] = uint32(v)
			}
			if uint64(len(out.Src)) >= maxEdgePairs {
				return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("more than %d pairs", uint64(maxEdgePairs)), Err: ErrFormat}
			}
			out.Src, out.Dst = append(out.Src, ends[0]), append(out.Dst, ends[1])
			if withLabels == 1 {
				if _, perr := strconv.ParseFloat(string(f[2]), 32); perr != nil {
					return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("label %q is not a number", truncate(string(f[2]))), Err: ErrSyntax}
				}
				labels = append(labels, string(f[2]))
			}
		}
		if err == io.EOF {
			break
		}
	}
	if len(out.Src) == 0 {
		return nil, &InputError{File: name, Record: -1, Msg: "no pairs: expected lines `src dst [label]`", Err: ErrSyntax}
	}
	if labels != nil {
		ints := make([]int64, len(labels))
		for i, l := range labels {
			v, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				ints = nil
				break
			}
			ints[i] = v
		}
		if ints != nil {
			out.LabelsI64 = ints
		} else {
			out.LabelsF32 = make([]float32, len(labels))
			for i, l := range labels {
				v, _ := strconv.ParseFloat(l, 32) // checked above
				out.LabelsF32[i] = float32(v)
			}
		}
	}
	return out, nil
}

func readEdgePairsNPY(r *bufio.Reader, name string, numNodes uint32) (*EdgePairs, error) {
	h, err := readNPYHeader(r, name)
	if err != nil {
		return nil, err
	}
	n, split, err := h.edgeLayout(name)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > maxEdgePairs {
		return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: %d pairs, expected 1 to %d", n, uint64(maxEdgePairs)), Err: ErrFormat}
	}
	vals, err := readNPYInts(r, name, h, 2*n)
	if err != nil {
		return nil, err
	}
	out := &EdgePairs{Src: make([]uint32, n), Dst: make([]uint32, n)}
	for i := range n {
		var s, d int64
		if split {
			s, d = vals[i], vals[n+i]
		} else {
			s, d = vals[2*i], vals[2*i+1]
		}
		for _, v := range [2]int64{s, d} {
			if v < 0 || v >= int64(numNodes) {
				return nil, &InputError{File: name, Record: i, Msg: fmt.Sprintf("node %d of pair (%d, %d) is out of range: nodes must be in [0, %d)", v, s, d, numNodes), Err: ErrIDRange}
			}
		}
		out.Src[i], out.Dst[i] = uint32(s), uint32(d)
	}
	return out, nil
}

// readNPYInts reads n integer elements of h's dtype as int64 (a uint64
// above 2^63-1 becomes negative, which every caller rejects).
func readNPYInts(r *bufio.Reader, name string, h *npyHeader, n int64) ([]int64, error) {
	if n > 1<<33 {
		return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: %d elements is implausibly many", n), Err: ErrFormat}
	}
	out := make([]int64, 0, min(n, 1<<20))
	buf := make([]byte, h.width)
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: truncated: the header promises %d elements, the data holds %d", n, i), Err: ErrSyntax}
		}
		var x int64
		switch {
		case h.width == 4 && h.signed:
			x = int64(int32(binary.LittleEndian.Uint32(buf)))
		case h.width == 4:
			x = int64(binary.LittleEndian.Uint32(buf))
		default:
			x = int64(binary.LittleEndian.Uint64(buf))
		}
		out = append(out, x)
	}
	return out, nil
}

// ReadEdgeLabels reads a training edge set's labels: a NumPy .npy 1-D
// array of n float32 (LabelsF32) or int64/int32 (LabelsI64) values, as
// PyG's edge_label.
func ReadEdgeLabels(path string, n int) (f32 []float32, i64 []int64, err error) {
	s, err := openStream(path, path, nil, false)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("open edge labels: %w", err)
	}
	defer s.Close()
	h, err := readNPYHeaderAny(s.r, path)
	if err != nil {
		return nil, nil, err
	}
	if len(h.shape) != 1 || h.shape[0] != int64(n) {
		return nil, nil, &InputError{File: path, Record: -1, Msg: fmt.Sprintf("npy: shape %v, expected (%d,): one label per training edge", h.shape, n), Err: ErrFormat}
	}
	switch h.descr {
	case "<f4", "=f4":
		f32 = make([]float32, n)
		if err := binary.Read(s.r, binary.LittleEndian, f32); err != nil {
			return nil, nil, &InputError{File: path, Record: -1, Msg: fmt.Sprintf("npy: truncated: expected %d float32 labels", n), Err: ErrSyntax}
		}
		return f32, nil, nil
	case "<i8", "=i8", "<i4", "=i4":
		h.width, h.signed = 8, true
		if h.descr[2] == '4' {
			h.width = 4
		}
		i64, err := readNPYInts(s.r, path, h, int64(n))
		return nil, i64, err
	}
	return nil, nil, &InputError{File: path, Record: -1, Msg: fmt.Sprintf("npy: dtype %q, expected little-endian float32, int64 or int32 labels", h.descr), Err: ErrFormat}
}

// ReadEdgeIDs reads stored edge ids (a training set given as edges of the
// graph, or DGL's reverse_eids): a NumPy .npy 1-D integer array, every
// id in [0, numEdges) (or, with allowNone, -1 for "none").
func ReadEdgeIDs(path string, numEdges uint64, allowNone bool) ([]int64, error) {
	s, err := openStream(path, path, nil, false)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return nil, err
		}
		return nil, fmt.Errorf("open edge ids: %w", err)
	}
	defer s.Close()
	h, err := readNPYHeader(s.r, path)
	if err != nil {
		return nil, err
	}
	if len(h.shape) != 1 || h.shape[0] == 0 {
		return nil, &InputError{File: path, Record: -1, Msg: fmt.Sprintf("npy: shape %v, expected (E,) edge ids", h.shape), Err: ErrFormat}
	}
	ids, err := readNPYInts(s.r, path, h, h.shape[0])
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if (id < 0 && !(allowNone && id == -1)) || (id >= 0 && uint64(id) >= numEdges) {
			return nil, &InputError{File: path, Record: -1, Msg: fmt.Sprintf("edge id %d (index %d) is out of range: ids must be in [0, %d)", id, i, numEdges), Err: ErrIDRange}
		}
	}
	return ids, nil
}
