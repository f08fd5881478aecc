package featstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// Store reads a feature store. Every row it returns was checked against
// its CRC-32C, every label against its page's and against num_classes.
// Its methods are safe for concurrent use.
type Store struct {
	m       *Manifest
	dir     string
	feat    io.ReaderAt
	lab     io.ReaderAt
	featSum *Checksums
	labSum  *Checksums
	files   []*os.File
}

// Open opens the feature store of graph directory dir: it checks its
// manifest (ErrBadManifest: malformed, edited, or of another version)
// against the graph's (ErrGraphMismatch) and the data files' sizes, and
// loads their checksums (4 bytes per node, and per page of labels), each
// .crc file checked whole against the manifest (a *DefectError,
// ErrCorrupt). A directory without a store gives an error wrapping
// ErrNoFeatures. Open reads no rows: each read checks the rows it
// delivers; Verify checks them all.
//
// The store's files stay open until Close: a store replaced meanwhile
// (chunkify features --force, which removes the old generation's files)
// is still read whole, at the generation it was opened at.
func Open(dir string) (*Store, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if err := m.checkGraph(dir); err != nil {
		return nil, err
	}
	return open(dir, m)
}

// OpenFor is Open for a store bound to fp (Options.Graph) instead of to
// dir's manifest.json: a heterogeneous graph's node type
// (heterofmt.Manifest.NodeTypeFingerprint). A store packed for another
// fingerprint is refused (ErrGraphMismatch).
func OpenFor(dir string, fp chunkfmt.Fingerprint) (*Store, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if err := m.checkFingerprint(dir, fp); err != nil {
		return nil, err
	}
	return open(dir, m)
}

// open opens the data files of the store m of dir, whose binding has been
// checked.
func open(dir string, m *Manifest) (*Store, error) {
	var err error
	s := &Store{m: m, dir: dir}
	open := func(df *DataFile, unit int64) (io.ReaderAt, *Checksums, error) {
		f, size, err := openSized(dir, df.File)
		if err != nil {
			return nil, nil, err
		}
		s.files = append(s.files, f)
		if err := checkSize(df, size); err != nil {
			return nil, nil, err
		}
		cf, csize, err := openSized(dir, df.CRCs.File)
		if err != nil {
			return nil, nil, err
		}
		defer cf.Close()
		c, err := loadChecksums(cf, csize, df, unit)
		if err != nil {
			return nil, nil, err
		}
		return f, c, nil
	}
	if s.feat, s.featSum, err = open(&m.Features.DataFile, m.Features.RowBytes); err != nil {
		s.Close()
		return nil, err
	}
	if m.Labels != nil {
		if s.lab, s.labSum, err = open(&m.Labels.DataFile, 4); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// openSized opens dir/name and returns it with its size.
func openSized(dir, name string) (*os.File, int64, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, 0, fmt.Errorf("featstore: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("featstore: %w", err)
	}
	return f, st.Size(), nil
}

// NewStore returns a Store reading the data of manifest m from features
// and labels (nil when m has none), checked against featureCRCs and
// labelCRCs, their checksums (ChecksumsOf their bytes as written, with
// the manifest's CRCSpan). It checks nothing against a graph or a file:
// it is the core Open builds on, and lets a caller (or a test) supply its
// own readers.
func NewStore(m *Manifest, features, labels io.ReaderAt, featureCRCs, labelCRCs []uint32) (*Store, error) {
	s := &Store{m: m, feat: features, lab: labels}
	var err error
	if s.featSum, err = newChecksums(&m.Features.DataFile, m.Features.RowBytes, featureCRCs); err != nil {
		return nil, err
	}
	if m.Labels != nil {
		if s.labSum, err = newChecksums(&m.Labels.DataFile, 4, labelCRCs); err != nil {
			return nil, err
		}
	}
	return s, nil
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

// FeatureReader returns the reader of the feature file: its bytes are
// unchecked, so a caller checks each row it uses with
// FeatureChecksums().Check.
func (s *Store) FeatureReader() io.ReaderAt { return s.feat }

// FeatureChecksums returns the feature file's checksums, one per row: a
// reader of its own (an O_DIRECT planner) checks every row it delivers
// with them.
func (s *Store) FeatureChecksums() *Checksums { return s.featSum }

// ReadRows copies the rows of ids, in the order of ids (repeats
// allowed), into dst, which must hold len(ids)*RowBytes bytes. The rows
// are read in ascending node order, neighbouring ones coalesced into
// reads of up to maxSpan bytes, and each is checked against its CRC-32C
// before it is copied (a *DefectError, ErrCorrupt, naming the file, the
// row and its bytes).
func (s *Store) ReadRows(ids []uint32, dst []byte) error {
	return gather(s.feat, s.featSum, s.m.NumNodes, s.m.Features.RowBytes, ids, dst)
}

// ReadLabels copies the labels of ids, in the order of ids, into dst
// (len(dst) >= len(ids)); NoLabel marks a node without one. The pages
// the labels are in are read whole and checked against their CRC-32Cs,
// and each label delivered is NoLabel or below num_classes (else a
// *DefectError naming the node).
func (s *Store) ReadLabels(ids []uint32, dst []int32) error {
	if s.m.Labels == nil {
		return fmt.Errorf("featstore: the store has no labels")
	}
	if len(dst) < len(ids) {
		return fmt.Errorf("featstore: ReadLabels: dst holds %d labels, want %d", len(dst), len(ids))
	}
	b := make([]byte, 4*len(ids))
	if err := gather(s.lab, s.labSum, s.m.NumNodes, 4, ids, b); err != nil {
		return err
	}
	for i, u := range ids {
		l := int32(binary.LittleEndian.Uint32(b[4*i:]))
		if err := s.m.Labels.check(int64(u), l); err != nil {
			return err
		}
		dst[i] = l
	}
	return nil
}

// check returns the defect of label l of node u, if it is one: below
// NoLabel, or not below num_classes.
func (l *Labels) check(u int64, label int32) error {
	if label >= NoLabel && int64(label) < l.NumClasses {
		return nil
	}
	want := fmt.Sprintf("want %d (none) or 0..%d (num_classes %d)", NoLabel, l.NumClasses-1, l.NumClasses)
	if l.NumClasses == 0 {
		want = fmt.Sprintf("want %d (none): the store has no classes", NoLabel)
	}
	return defect(&l.DataFile, 4*u/l.CRCSpan, 4, u, "label %d out of range: %s", label, want)
}

// readFull reads len(b) bytes at off; a short file is a defect.
func readFull(r io.ReaderAt, df *DataFile, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == io.EOF || err == nil {
		return defect(df, -1, 0, -1, "truncated: %d bytes at offset %d, short by %d (manifest size %d)", n, off, len(b)-n, df.Size)
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

// gather reads the rows of ids (rb bytes each) into dst: sorted runs of
// rows, widened to whole CRC spans (nothing for the features' rows, pages
// for the labels), each read once; every span a row delivered lies in is
// checked, once, before the row is copied.
func gather(r io.ReaderAt, c *Checksums, numNodes uint32, rb int64, ids []uint32, dst []byte) error {
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
		lo, hi := c.Widen(first*rb, (last+1)*rb)
		if int64(cap(buf)) < hi-lo {
			buf = make([]byte, hi-lo)
		}
		if err := readFull(r, c.df, buf[:hi-lo], lo); err != nil {
			return err
		}
		checked := lo // bytes [lo, checked) of the run are checked
		for _, k := range order[i:j] {
			off := int64(ids[k]) * rb
			if slo, shi := c.Widen(off, off+rb); shi > checked {
				from := max(slo, checked)
				if err := c.Check(from, buf[from-lo:shi-lo]); err != nil {
					return err
				}
				checked = shi
			}
			copy(dst[int64(k)*rb:int64(k+1)*rb], buf[off-lo:off-lo+rb])
		}
		i = j
	}
	return nil
}
