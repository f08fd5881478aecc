package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/progress"
)

// FeatureOptions configure PackFeatures.
type FeatureOptions struct {
	// Labels is the label input ("" for none): OGB's node-label.csv (one
	// number per line, nan or empty for none) or a 1-D .npy of int32,
	// int64, float32 or float64 (NaN for none); either may be compressed.
	Labels string
	// Dim and DType describe raw feature rows (an input that is neither
	// .npy nor .csv). For a .npy or .csv they must agree with what the
	// input holds when given.
	Dim   int
	DType featstore.DType
	// Force replaces an existing store (the old one stays valid until the
	// new manifest lands).
	Force bool
	// Progress, when not nil, receives a progress line (a terminal).
	Progress  io.Writer
	CreatedBy string
	// Graph, when not nil, is the fingerprint the store is bound to, and
	// its NumNodes the rows, instead of dir's manifest.json: a node type
	// of a heterogeneous graph (featstore.Options.Graph).
	Graph *chunkfmt.Fingerprint
}

// FeatureSummary describes a packed feature store.
type FeatureSummary struct {
	Dir        string          `json:"dir"`
	Features   string          `json:"features"`
	Format     string          `json:"format"` // npy, raw or csv
	Labels     string          `json:"labels,omitempty"`
	NumNodes   uint32          `json:"num_nodes"`
	Dim        int             `json:"dim"`
	DType      featstore.DType `json:"dtype"`
	Bytes      int64           `json:"bytes"` // of the feature file
	Labeled    uint32          `json:"labeled"`
	NumClasses int64           `json:"num_classes"`
	Seconds    float64         `json:"seconds"`
}

// Input formats of feature matrices.
const (
	featNPY = "npy"
	featRaw = "raw"
	featCSV = "csv"
)

// PackFeatures packs the feature matrix in the file features, and the
// labels in o.Labels, into the graph directory dir (package featstore).
// The inputs are streamed: memory stays O(a buffer), whatever their size.
// Every input's shape is checked against the graph's num_nodes; a bad
// input gives an *InputError naming the file, and the line or shape
// expected, and leaves no store behind (an old one stays).
func PackFeatures(ctx context.Context, features, dir string, o FeatureOptions) (*FeatureSummary, error) {
	start := time.Now()
	var n uint32
	if o.Graph != nil {
		n = o.Graph.NumNodes
	} else {
		g, err := chunkfmt.ReadManifest(dir)
		if err != nil {
			return nil, err
		}
		n = g.NumNodes
	}
	bar := progress.New(o.Progress, inputSize(features)+inputSize(o.Labels), "features", o.Progress != nil)
	defer bar.Done()
	src, err := openFeatures(features, n, o, bar)
	if err != nil {
		return nil, err
	}
	defer src.close()
	var lab *labelSource
	if o.Labels != "" {
		if lab, err = openLabels(o.Labels, n, bar); err != nil {
			return nil, err
		}
		defer lab.close()
	}
	w, err := featstore.Create(dir, featstore.Options{
		DType: src.dtype, Dim: src.dim, Labels: lab != nil, FeatureSource: filepath.Base(features),
		LabelSource: filepath.Base(o.Labels), Force: o.Force, CreatedBy: o.CreatedBy, Graph: o.Graph,
	})
	if err != nil {
		if errors.Is(err, featstore.ErrExists) {
			return nil, fmt.Errorf("%w: %v", ErrExists, err)
		}
		return nil, err
	}
	defer w.Abort()
	if err := src.pump(ctx, w); err != nil {
		return nil, err
	}
	if lab != nil {
		if err := lab.pump(ctx, w); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	m := w.Manifest()
	s := &FeatureSummary{Dir: dir, Features: features, Format: src.format, Labels: o.Labels, NumNodes: n,
		Dim: src.dim, DType: src.dtype, Bytes: m.Features.Size, Seconds: time.Since(start).Seconds()}
	if m.Labels != nil {
		s.Labeled, s.NumClasses = m.Labels.Labeled, m.Labels.NumClasses
	}
	return s, nil
}

// inputSize is path's size for the progress line's total, 0 when unknown.
func inputSize(path string) int64 {
	if st, err := os.Stat(path); err == nil && path != "" {
		return st.Size()
	}
	return 0
}

// featureSource is an opened feature input whose shape has been checked.
type featureSource struct {
	s      *stream
	name   string
	format string
	dtype  featstore.DType
	dim    int
	rows   uint32
	first  []float32 // csv: the first row, parsed to learn dim
	line   int64     // csv: lines read
	sc     *bufio.Scanner
}

func (f *featureSource) close() { f.s.Close() }

func shapeErr(name string, format string, args ...any) error {
	return &InputError{File: name, Record: -1, Msg: fmt.Sprintf(format, args...), Err: featstore.ErrShape}
}

func formatErr(name string, format string, args ...any) error {
	return &InputError{File: name, Record: -1, Msg: fmt.Sprintf(format, args...), Err: ErrFormat}
}

// isCSVName reports whether path is named *.csv, compressed or not.
func isCSVName(path string) bool {
	name := strings.ToLower(filepath.Base(path))
	for _, suf := range []string{".gz", ".gzip", ".zst", ".zstd"} {
		name = strings.TrimSuffix(name, suf)
	}
	return filepath.Ext(name) == ".csv"
}

func openFeatures(path string, numNodes uint32, o FeatureOptions, bar *progress.Bar) (*featureSource, error) {
	s, err := openStream(path, path, bar, true) // read once: its page cache is handed back
	if err != nil {
		return nil, err
	}
	f := &featureSource{s: s, name: path, rows: numNodes}
	if err := f.open(path, o); err != nil {
		s.Close()
		return nil, err
	}
	return f, nil
}

func (f *featureSource) open(path string, o FeatureOptions) error {
	head, _ := f.s.r.Peek(len(magicNPY))
	switch {
	case bytes.Equal(head, magicNPY):
		f.format = featNPY
		h, err := readNPYHeaderAny(f.s.r, f.name)
		if err != nil {
			return err
		}
		if f.dtype, err = featureDType(h, f.name); err != nil {
			return err
		}
		want := fmt.Sprintf("(%d, dim)", f.rows)
		if len(h.shape) != 2 {
			return shapeErr(f.name, "npy: shape %s is not a feature matrix: want %s, one row per node of the graph", shapeString(h.shape), want)
		}
		if h.fortran {
			return formatErr(f.name, "npy: fortran_order is True: want a C-order (row-major) array, e.g. numpy.ascontiguousarray(x)")
		}
		if h.shape[0] != int64(f.rows) {
			return shapeErr(f.name, "npy: shape %s has %d rows, the graph has %d nodes: want %s", shapeString(h.shape), h.shape[0], f.rows, want)
		}
		if h.shape[1] <= 0 || h.shape[1] > featstore.MaxDim {
			return shapeErr(f.name, "npy: shape %s: dim %d, want 1..%d", shapeString(h.shape), h.shape[1], featstore.MaxDim)
		}
		f.dim = int(h.shape[1])
		if o.DType != "" && o.DType != f.dtype {
			return shapeErr(f.name, "npy: dtype %s, but --dtype %s was given", f.dtype, o.DType)
		}
		if o.Dim != 0 && o.Dim != f.dim {
			return shapeErr(f.name, "npy: dim %d, but --dim %d was given", f.dim, o.Dim)
		}
	case isCSVName(path):
		f.format, f.dtype = featCSV, featstore.Float32
		if o.DType != "" && o.DType != featstore.Float32 {
			return formatErr(f.name, "csv rows are read as float32, not --dtype %s", o.DType)
		}
		f.sc = bufio.NewScanner(f.s.r)
		f.sc.Buffer(make([]byte, 64<<10), 64<<20)
		if f.rows == 0 {
			return formatErr(f.name, "the graph has no nodes: a csv cannot say the feature dimension")
		}
		if !f.sc.Scan() {
			if err := f.sc.Err(); err != nil {
				return f.scanErr(err)
			}
			return shapeErr(f.name, "empty: want %d rows, one per node of the graph", f.rows)
		}
		f.line = 1
		row, err := parseCSVRow(f.sc.Bytes(), nil)
		if err != nil {
			return &InputError{File: f.name, Line: 1, Msg: err.Error(), Err: ErrSyntax}
		}
		if len(row) > featstore.MaxDim {
			return shapeErr(f.name, "line 1 has %d values: more than the maximum dim %d", len(row), featstore.MaxDim)
		}
		f.first, f.dim = row, len(row)
		if o.Dim != 0 && o.Dim != f.dim {
			return &InputError{File: f.name, Line: 1, Msg: fmt.Sprintf("%d values, but --dim %d was given", f.dim, o.Dim), Err: featstore.ErrShape}
		}
	default:
		f.format = featRaw
		if o.Dim <= 0 || o.DType == "" {
			return formatErr(f.name, "neither .npy (no \\x93NUMPY magic) nor .csv: for raw little-endian rows give --dim and --dtype")
		}
		f.dim, f.dtype = o.Dim, o.DType
		if f.s.comp == compNone {
			if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
				if want := f.rawSize(); st.Size() != want {
					return shapeErr(f.name, "%d bytes, want num_nodes × dim × %d bytes (%s) = %d × %d × %d = %d", st.Size(), f.dtype.Size(), f.dtype, f.rows, f.dim, f.dtype.Size(), want)
				}
			}
		}
	}
	return nil
}

func (f *featureSource) rawSize() int64 {
	return int64(f.rows) * int64(f.dim) * int64(f.dtype.Size())
}

func shapeString(s []int64) string {
	p := make([]string, len(s))
	for i, d := range s {
		p[i] = strconv.FormatInt(d, 10)
	}
	if len(s) == 1 {
		return "(" + p[0] + ",)"
	}
	return "(" + strings.Join(p, ", ") + ")"
}

// featureDType maps an npy descriptor to a feature dtype.
func featureDType(h *npyHeader, name string) (featstore.DType, error) {
	if d, ok := featstore.DTypeOfNumPy(h.descr); ok {
		return d, nil
	}
	return "", formatErr(name, "npy: dtype %q is not supported: want little-endian float32 (<f4), float16 (<f2), int8 (|i1) or uint8 (|u1)", h.descr)
}

// pumpBuf is how many bytes of rows are moved per Append.
const pumpBuf = 1 << 20

func (f *featureSource) pump(ctx context.Context, w *featstore.Writer) error {
	if f.format == featCSV {
		return f.pumpCSV(ctx, w)
	}
	rb := w.RowBytes()
	want := f.rawSize()
	buf := make([]byte, max(rb, pumpBuf/rb*rb))
	r := f.s.unbuffered()
	var done int64
	for done < want {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(int64(len(buf)), want-done)
		m, err := io.ReadFull(r, buf[:k])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return f.shortErr(done + int64(m))
		}
		if err != nil {
			return f.readErr(err)
		}
		if err := w.Append(buf[:k]); err != nil {
			return err
		}
		done += k
	}
	var one [1]byte
	switch m, err := io.ReadFull(r, one[:]); {
	case m > 0:
		extra, _ := io.Copy(io.Discard, r)
		return f.longErr(want + 1 + extra)
	case err != io.EOF:
		return f.readErr(err)
	}
	return nil
}

func (f *featureSource) readErr(err error) error {
	var ie *InputError
	if errors.As(err, &ie) {
		return err
	}
	return fmt.Errorf("%s: %w", f.name, err)
}

func (f *featureSource) shortErr(got int64) error {
	if f.format == featNPY {
		return shapeErr(f.name, "npy: data truncated: %d bytes, the header's shape (%d, %d) %s needs %d", got, f.rows, f.dim, f.dtype, f.rawSize())
	}
	return shapeErr(f.name, "%d bytes, want num_nodes × dim × %d bytes (%s) = %d × %d × %d = %d", got, f.dtype.Size(), f.dtype, f.rows, f.dim, f.dtype.Size(), f.rawSize())
}

func (f *featureSource) longErr(got int64) error {
	if f.format == featNPY {
		return shapeErr(f.name, "npy: %d bytes of data, more than the header's shape (%d, %d) %s holds (%d)", got, f.rows, f.dim, f.dtype, f.rawSize())
	}
	return f.shortErr(got)
}

func (f *featureSource) scanErr(err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return &InputError{File: f.name, Line: f.line + 1, Msg: "line longer than 64 MiB", Err: ErrSyntax}
	}
	return f.readErr(err)
}

func (f *featureSource) pumpCSV(ctx context.Context, w *featstore.Writer) error {
	rb := int(w.RowBytes())
	buf := make([]byte, 0, max(rb, pumpBuf/rb*rb))
	put := func(row []float32) error {
		for _, v := range row {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		if len(buf)+rb > cap(buf) {
			err := w.Append(buf)
			buf = buf[:0]
			return err
		}
		return nil
	}
	if err := put(f.first); err != nil {
		return err
	}
	rows := uint32(1)
	row := f.first
	for f.sc.Scan() {
		f.line++
		if f.line&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var err error
		if row, err = parseCSVRow(f.sc.Bytes(), row[:0]); err != nil {
			return &InputError{File: f.name, Line: f.line, Msg: err.Error(), Err: ErrSyntax}
		}
		if len(row) != f.dim {
			return &InputError{File: f.name, Line: f.line, Msg: fmt.Sprintf("%d values, want %d (as on line 1)", len(row), f.dim), Err: ErrSyntax}
		}
		if rows == f.rows {
			return &InputError{File: f.name, Line: f.line, Msg: fmt.Sprintf("more than %d rows: the graph has %d nodes", f.rows, f.rows), Err: featstore.ErrShape}
		}
		if err := put(row); err != nil {
			return err
		}
		rows++
	}
	if err := f.sc.Err(); err != nil {
		return f.scanErr(err)
	}
	if rows != f.rows {
		return shapeErr(f.name, "%d rows, the graph has %d nodes: want one row per node", rows, f.rows)
	}
	if len(buf) > 0 {
		return w.Append(buf)
	}
	return nil
}

// parseCSVRow parses one line of OGB's node-feat.csv: comma-separated
// numbers, read as float32 (CR and spaces around a value ignored), and
// appends them to dst. An empty field or a value that is no number is an
// error naming the field.
func parseCSVRow(line []byte, dst []float32) ([]float32, error) {
	line = bytes.TrimRight(line, "\r")
	for i := 1; ; i++ {
		field := line
		c := bytes.IndexByte(line, ',')
		if c >= 0 {
			field, line = line[:c], line[c+1:]
		}
		field = bytes.TrimSpace(field)
		if len(field) == 0 {
			return dst, fmt.Errorf("value %d is empty: want a number", i)
		}
		v, err := strconv.ParseFloat(string(field), 32)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return dst, fmt.Errorf("value %d %q: not a number", i, truncate(string(field)))
		}
		dst = append(dst, float32(v))
		if c < 0 {
			return dst, nil
		}
	}
}

// labelSource is an opened label input whose shape has been checked.
type labelSource struct {
	s    *stream
	name string
	rows uint32
	npy  *npyHeader // nil: text, one label per line
}

func (l *labelSource) close() { l.s.Close() }

// labelSink takes labels in node order: the store being packed
// (featstore.Writer), or ReadLabels' slice.
type labelSink interface {
	AppendLabels(labels []int32) error
}

// labelSlice collects labels in memory (ReadLabels).
type labelSlice []int32

func (s *labelSlice) AppendLabels(labels []int32) error {
	*s = append(*s, labels...)
	return nil
}

// ReadLabels reads the labels of numNodes nodes into memory, from the
// inputs `chunkify features --labels` takes (a 1-D .npy of int32, int64,
// float32 or float64 with NaN for none, or text, one per line), checked
// as it checks them: exactly one per node, each -1 (none) or a class in
// 0..2³¹−1. Errors are *InputError naming the file.
func ReadLabels(ctx context.Context, path string, numNodes uint32) ([]int32, error) {
	l, err := openLabels(path, numNodes, nil)
	if err != nil {
		return nil, err
	}
	defer l.close()
	out := make(labelSlice, 0, numNodes)
	if err := l.pump(ctx, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func openLabels(path string, numNodes uint32, bar *progress.Bar) (*labelSource, error) {
	s, err := openStream(path, path, bar, true) // read once: its page cache is handed back
	if err != nil {
		return nil, err
	}
	l := &labelSource{s: s, name: path, rows: numNodes}
	if head, _ := s.r.Peek(len(magicNPY)); bytes.Equal(head, magicNPY) {
		h, err := readNPYHeaderAny(s.r, path)
		if err == nil {
			err = l.checkNPY(h)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		l.npy = h
	}
	return l, nil
}

func (l *labelSource) checkNPY(h *npyHeader) error {
	switch h.descr {
	case "<i4", "=i4", "<f4", "=f4":
		h.width = 4
	case "<i8", "=i8", "<f8", "=f8":
		h.width = 8
	default:
		return formatErr(l.name, "npy: dtype %q is not supported for labels: want int32, int64, float32 or float64 (NaN for none)", h.descr)
	}
	n := int64(-1)
	switch {
	case len(h.shape) == 1:
		n = h.shape[0]
	case len(h.shape) == 2 && h.shape[1] == 1:
		n = h.shape[0]
	}
	if n < 0 {
		return shapeErr(l.name, "npy: shape %s is not a label vector: want (%d,)", shapeString(h.shape), l.rows)
	}
	if n != int64(l.rows) {
		return shapeErr(l.name, "npy: shape %s has %d labels, the graph has %d nodes: want (%d,)", shapeString(h.shape), n, l.rows, l.rows)
	}
	return nil
}

func (l *labelSource) pump(ctx context.Context, w labelSink) error {
	if l.npy != nil {
		return l.pumpNPY(ctx, w)
	}
	sc := bufio.NewScanner(l.s.r)
	out := make([]int32, 0, 4096)
	var line int64
	var rows uint32
	for sc.Scan() {
		line++
		v, err := parseLabel(sc.Bytes())
		if err != nil {
			return &InputError{File: l.name, Line: line, Msg: err.Error(), Err: ErrSyntax}
		}
		if rows == l.rows {
			return &InputError{File: l.name, Line: line, Msg: fmt.Sprintf("more than %d labels: the graph has %d nodes", l.rows, l.rows), Err: featstore.ErrShape}
		}
		out = append(out, v)
		rows++
		if len(out) == cap(out) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := w.AppendLabels(out); err != nil {
				return err
			}
			out = out[:0]
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", l.name, err)
	}
	if rows != l.rows {
		return shapeErr(l.name, "%d labels, the graph has %d nodes: want one line per node", rows, l.rows)
	}
	return w.AppendLabels(out)
}

// parseLabel parses one line of OGB's node-label.csv: an integer >= 0
// (written as an integer or an integral float, e.g. 3 or 3.0), or nan,
// empty or -1 for no label.
func parseLabel(b []byte) (int32, error) {
	t := string(bytes.TrimSpace(b))
	if t == "" || strings.EqualFold(t, "nan") || t == "-1" {
		return featstore.NoLabel, nil
	}
	if v, err := strconv.ParseInt(t, 10, 32); err == nil && v >= 0 {
		return int32(v), nil
	}
	v, err := strconv.ParseFloat(t, 64)
	if err == nil && math.IsNaN(v) {
		return featstore.NoLabel, nil
	}
	if err != nil || v != math.Trunc(v) || v < 0 || v > math.MaxInt32 {
		return 0, fmt.Errorf("label %q: want an integer 0..%d, or nan or empty for none", truncate(t), math.MaxInt32)
	}
	return int32(v), nil
}

func (l *labelSource) pumpNPY(ctx context.Context, w labelSink) error {
	width := l.npy.width
	float := l.npy.descr[1] == 'f'
	buf := make([]byte, 64<<10)
	out := make([]int32, 0, len(buf)/width)
	r := l.s.r
	for done := int64(0); done < int64(l.rows); {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(int64(len(buf)/width), int64(l.rows)-done)
		if m, err := io.ReadFull(r, buf[:k*int64(width)]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return shapeErr(l.name, "npy: data truncated: %d of %d labels", done+int64(m/width), l.rows)
			}
			return fmt.Errorf("%s: %w", l.name, err)
		}
		out = out[:0]
		for i := range k {
			b := buf[i*int64(width):]
			var v float64
			var iv int64
			switch {
			case float && width == 4:
				v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
			case float:
				v = math.Float64frombits(binary.LittleEndian.Uint64(b))
			case width == 4:
				iv = int64(int32(binary.LittleEndian.Uint32(b)))
			default:
				iv = int64(binary.LittleEndian.Uint64(b))
			}
			if float {
				switch {
				case math.IsNaN(v):
					iv = -1
				case v != math.Trunc(v) || v < -1 || v > math.MaxInt32:
					return &InputError{File: l.name, Record: -1, Msg: fmt.Sprintf("npy: node %d: label %v: want an integer 0..%d, or NaN for none", done+i, v, math.MaxInt32), Err: ErrSyntax}
				default:
					iv = int64(v)
				}
			}
			if iv < -1 || iv > math.MaxInt32 {
				return &InputError{File: l.name, Record: -1, Msg: fmt.Sprintf("npy: node %d: label %d: want 0..%d, or -1 for none", done+i, iv, math.MaxInt32), Err: ErrSyntax}
			}
			out = append(out, int32(iv))
		}
		if err := w.AppendLabels(out); err != nil {
			return err
		}
		done += k
	}
	if m, _ := io.ReadFull(r, buf[:1]); m > 0 {
		return shapeErr(l.name, "npy: more data than the header's %d labels", l.rows)
	}
	return nil
}
