package featstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Store reads a feature store. Its methods are safe for concurrent use.
type Store struct {
	m     *Manifest
	dir   string
	feat  io.ReaderAt
	lab   io.ReaderAt
	files []*os.File
}

// Open opens the feature store of graph directory dir, checking its
// manifest against the graph's (ErrGraphMismatch) and the data files'
// sizes (a *DefectError, ErrCorrupt). A directory without a store gives
// an error wrapping ErrNoFeatures. Open reads no data: Verify checks the
// blocks' CRCs.
func Open(dir string) (*Store, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if err := m.checkGraph(dir); err != nil {
		return nil, err
	}
	s := &Store{m: m, dir: dir}
	open := func(df *DataFile) (io.ReaderAt, error) {
		f, err := os.Open(filepath.Join(dir, df.File))
		if err != nil {
			return nil, fmt.Errorf("featstore: %w", err)
		}
		s.files = append(s.files, f)
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("featstore: %w", err)
		}
		if st.Size() != df.Size {
			return nil, defect(df, -1, -1, "size %d bytes, manifest says %d", st.Size(), df.Size)
		}
		return f, nil
	}
	if s.feat, err = open(&m.Features.DataFile); err != nil {
		s.Close()
		return nil, err
	}
	if m.Labels != nil {
		if s.lab, err = open(&m.Labels.DataFile); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// NewStore returns a Store reading the data of manifest m from features
// and labels (nil when m has none). It checks nothing against a graph;
// it is the core Open builds on, and lets a caller (or a test) supply
// its own readers.
func NewStore(m *Manifest, features, labels io.ReaderAt) *Store {
	return &Store{m: m, feat: features, lab: labels}
}

// Close closes the files Open opened.
func (s *Store) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}

// Manifest returns the store's manifest. It must not be modified.
func (s *Store) Manifest() *Manifest { return s.m }

// NumNodes returns the number of rows.
func (s *Store) NumNodes() uint32 { return s.m.NumNodes }

// Dim returns the number of features per node.
func (s *Store) Dim() int { return s.m.Features.Dim }

// DType returns the features' element type.
func (s *Store) DType() DType { return s.m.Features.DType }

// RowBytes returns the size of one row.
func (s *Store) RowBytes() int64 { return s.m.Features.RowBytes }

// RowOffset returns the byte offset of node u's row in the feature file
// (rows start at offset 0, without a header).
func (s *Store) RowOffset(u uint32) int64 { return int64(u) * s.m.Features.RowBytes }

// FeaturesPath returns the path of the feature file (for a reader of its
// own, such as an O_DIRECT planner); empty for a Store from NewStore.
func (s *Store) FeaturesPath() string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, s.m.Features.File)
}

// HasLabels reports whether the store has labels.
func (s *Store) HasLabels() bool { return s.m.Labels != nil }

// FeatureReader returns the reader of the feature file.
func (s *Store) FeatureReader() io.ReaderAt { return s.feat }

// ReadRows copies the rows of ids, in the order of ids (repeats
// allowed), into dst, which must hold len(ids)*RowBytes bytes. The rows
// are read in ascending node order, neighbouring ones coalesced into
// reads of up to maxSpan bytes. It checks no CRC (ReadBlock does).
func (s *Store) ReadRows(ids []uint32, dst []byte) error {
	return gather(s.feat, &s.m.Features.DataFile, s.m.NumNodes, s.m.Features.RowBytes, ids, dst)
}

// ReadLabels copies the labels of ids, in the order of ids, into dst
// (len(dst) >= len(ids)); NoLabel marks a node without one.
func (s *Store) ReadLabels(ids []uint32, dst []int32) error {
	if s.m.Labels == nil {
		return fmt.Errorf("featstore: the store has no labels")
	}
	if len(dst) < len(ids) {
		return fmt.Errorf("featstore: ReadLabels: dst holds %d labels, want %d", len(dst), len(ids))
	}
	b := make([]byte, 4*len(ids))
	if err := gather(s.lab, &s.m.Labels.DataFile, s.m.NumNodes, 4, ids, b); err != nil {
		return err
	}
	for i := range ids {
		dst[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// ReadBlock reads block i of the feature file into buf (grown as
// needed) and checks its CRC-32C; it returns the block's bytes.
func (s *Store) ReadBlock(i int, buf []byte) ([]byte, error) {
	return readBlock(s.feat, &s.m.Features.DataFile, i, buf)
}

func readBlock(r io.ReaderAt, df *DataFile, i int, buf []byte) ([]byte, error) {
	if i < 0 || i >= df.Blocks() {
		return nil, fmt.Errorf("featstore: %s: block %d out of range [0,%d)", df.File, i, df.Blocks())
	}
	off, n := df.BlockRange(i)
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if err := readFull(r, df, buf, off); err != nil {
		return nil, err
	}
	if err := df.CheckBlock(i, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readFull reads len(b) bytes at off; a short file is a defect.
func readFull(r io.ReaderAt, df *DataFile, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == io.EOF || err == nil {
		return defect(df, -1, -1, "truncated: %d bytes at offset %d, short by %d (manifest size %d)", n, off, len(b)-n, df.Size)
	}
	return fmt.Errorf("featstore: reading %s at offset %d: %w", df.File, off, err)
}

// maxSpan bounds one coalesced read of ReadRows (and its buffer); maxGap
// is the largest run of unwanted bytes a read spans rather than split:
// one page, about what a second read costs. A larger gap (64 KiB) made a
// minibatch of random rows read most of the file (BenchmarkReadRows:
// 1.8 ms against 0.1 ms).
const (
	maxSpan = 1 << 20
	maxGap  = 4 << 10
)

func gather(r io.ReaderAt, df *DataFile, numNodes uint32, rb int64, ids []uint32, dst []byte) error {
	if int64(len(dst)) < int64(len(ids))*rb {
		return fmt.Errorf("featstore: dst holds %d bytes, want %d rows of %d", len(dst), len(ids), rb)
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
		if ids[i] >= numNodes {
			return fmt.Errorf("featstore: node %d (position %d): out of range, the store has %d nodes", ids[i], i, numNodes)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return int(ids[a]) - int(ids[b]) })
	var buf []byte
	for i := 0; i < len(order); {
		first := int64(ids[order[i]])
		j, last := i+1, first
		for j < len(order) {
			u := int64(ids[order[j]])
			if (u-last-1)*rb > maxGap || (u-first+1)*rb > max(maxSpan, rb) {
				break
			}
			last = u
			j++
		}
		n := (last - first + 1) * rb
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		if err := readFull(r, df, buf[:n], first*rb); err != nil {
			return err
		}
		for _, k := range order[i:j] {
			o := (int64(ids[k]) - first) * rb
			copy(dst[int64(k)*rb:int64(k+1)*rb], buf[o:o+rb])
		}
		i = j
	}
	return nil
}
