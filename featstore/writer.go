package featstore

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// Options describe the store a Writer packs.
type Options struct {
	DType         DType  // element type of the features
	Dim           int    // features per node
	Labels        bool   // labels follow through AppendLabels
	FeatureSource string // the input's name, recorded in the manifest
	LabelSource   string
	Force         bool // replace an existing store (atomically, at Close)
	CreatedBy     string
	// Graph, when not nil, is what the store is bound to instead of dir's
	// manifest.json: the rows of a node set that is no graph directory of
	// its own (a node type of a heterogeneous graph, heterofmt), opened
	// with OpenFor and checked with VerifyFor.
	Graph *chunkfmt.Fingerprint
}

// Writer packs a feature store into a graph directory: rows in node
// order through Append, labels through AppendLabels, then Close. Its
// memory is a write buffer per file, whatever the matrix's size. Until
// Close returns nil the directory's previous store, if any, is untouched;
// call Abort (or defer it) on every error path to remove what was
// written. A Writer is not safe for concurrent use, and two Writers must
// not pack into the same directory at once.
type Writer struct {
	dir    string
	m      Manifest
	feat   *dataWriter
	lab    *dataWriter
	rows   uint64 // rows appended
	labels uint64 // labels appended
	maxLab int32
	old    []string // the previous store's data files, removed after Close
	done   bool
}

// Steps of a Writer, in order: each is a failpoint (internal/failpoint)
// whose error fails the step, the seam of the kill and fault tests.
const (
	stepCreate   = "featstore/create"   // the temporary data files exist
	stepAppend   = "featstore/append"   // before each Append / AppendLabels writes
	stepSync     = "featstore/sync"     // Close: before the data files are flushed and fsynced
	stepRename   = "featstore/rename"   // Close: the feature file has its final name, the labels not yet
	stepManifest = "featstore/manifest" // Close: the data files are in place, features.json not yet
	stepCleanup  = "featstore/cleanup"  // Close: features.json written, the old data files not yet removed
)

func hook(step string) error { return failpoint.Hit(step) }

// Create starts a feature store in the graph directory dir, which must
// hold a graph (chunkfmt manifest.json): the store has one row per node
// of it. It fails with ErrExists when dir has a store and o.Force is not
// set. Files left by a Writer that was killed are removed here.
func Create(dir string, o Options) (*Writer, error) {
	var fp chunkfmt.Fingerprint
	if o.Graph != nil {
		fp = *o.Graph
	} else {
		g, err := chunkfmt.ReadManifest(dir)
		if err != nil {
			return nil, fmt.Errorf("featstore: %w", err)
		}
		fp = g.Fingerprint()
	}
	if o.DType.Size() == 0 {
		return nil, fmt.Errorf("%w: dtype %q: want float32, float16, int8 or uint8", ErrShape, o.DType)
	}
	if o.Dim <= 0 || o.Dim > MaxDim {
		return nil, fmt.Errorf("%w: dim %d: want 1..%d", ErrShape, o.Dim, MaxDim)
	}
	// The current store's files are kept until the new manifest lands,
	// those of an invalid manifest too (another version, an edited one):
	// they may be the only copy of the rows, or the input being packed.
	var cur []string
	switch b, err := os.ReadFile(filepath.Join(dir, ManifestFile)); {
	case err == nil:
		if !o.Force {
			return nil, fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, filepath.Join(dir, ManifestFile))
		}
		cur = namedFiles(b)
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("featstore: reading manifest: %w", err)
	}
	w := &Writer{dir: dir, maxLab: -1}
	keep := map[string]bool{}
	for _, f := range cur {
		keep[f] = true
		w.old = append(w.old, f)
	}
	gen, err := removeStale(dir, keep)
	if err != nil {
		return nil, err
	}
	gen++
	rb := int64(o.Dim) * int64(o.DType.Size())
	w.m = Manifest{
		Version: FormatVersion, NumNodes: fp.NumNodes, Graph: fp, CreatedBy: o.CreatedBy,
		Features: Features{DataFile: newDataFile("features", gen, o.FeatureSource, int64(fp.NumNodes)*rb, rb),
			DType: o.DType, Dim: o.Dim, RowBytes: rb},
	}
	if w.feat, err = newDataWriter(dir, &w.m.Features.DataFile); err != nil {
		return nil, err
	}
	if o.Labels {
		w.m.Labels = &Labels{DataFile: newDataFile("labels", gen, o.LabelSource, int64(fp.NumNodes)*4, LabelCRCSpan), DType: LabelDType}
		if w.lab, err = newDataWriter(dir, &w.m.Labels.DataFile); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := hook(stepCreate); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// newDataFile describes data file kind-gen.bin of size bytes, a CRC per
// span bytes (the .crc file's own CRC is filled as it is written).
func newDataFile(kind string, gen int, source string, size, span int64) DataFile {
	name := kind + "-" + strconv.Itoa(gen)
	return DataFile{File: name + ".bin", Source: source, Size: size, CRCSpan: span, CRCs: CRCFile{File: name + ".crc"}}
}

// removeStale removes the data files, their checksums and temporaries of
// dir that keep does not name (left by a Writer that was killed, or by a
// store that was replaced) and returns the largest generation found among
// all of them, kept or not.
func removeStale(dir string, keep map[string]bool) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("featstore: %w", err)
	}
	gen, removed := 0, false
	for _, e := range ents {
		name := e.Name()
		base := strings.TrimSuffix(strings.TrimPrefix(name, "."), ".tmp")
		isTemp := strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") && dataName.MatchString(base)
		if !isTemp && !dataName.MatchString(name) && !strings.HasPrefix(name, "."+ManifestFile+".tmp-") {
			continue
		}
		if m := dataName.FindStringSubmatch(base); m != nil {
			if g, err := strconv.Atoi(m[2]); err == nil {
				gen = max(gen, g)
			}
		}
		if keep[name] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("featstore: removing stale %s: %w", name, err)
		}
		removed = true
	}
	if removed {
		if err := atomicfile.SyncDir(dir); err != nil {
			return 0, fmt.Errorf("featstore: %w", err)
		}
	}
	return gen, nil
}

// RowBytes returns the size of one row.
func (w *Writer) RowBytes() int64 { return w.m.Features.RowBytes }

// NumNodes returns the number of rows (and labels) the store needs.
func (w *Writer) NumNodes() uint32 { return w.m.NumNodes }

// Rows returns the number of rows appended so far.
func (w *Writer) Rows() uint64 { return w.rows }

// Append writes whole rows, in node order: len(rows) must be a multiple
// of RowBytes, and no more than NumNodes rows in all.
func (w *Writer) Append(rows []byte) error {
	if w.done {
		return ErrClosed
	}
	rb := w.m.Features.RowBytes
	if int64(len(rows))%rb != 0 {
		return fmt.Errorf("%w: %d bytes is not a whole number of %d-byte rows", ErrShape, len(rows), rb)
	}
	n := uint64(int64(len(rows)) / rb)
	if w.rows+n > uint64(w.m.NumNodes) {
		return fmt.Errorf("%w: more than %d rows: the graph has %d nodes", ErrShape, w.m.NumNodes, w.m.NumNodes)
	}
	if err := hook(stepAppend); err != nil {
		return err
	}
	if err := w.feat.write(rows); err != nil {
		return err
	}
	w.rows += n
	return nil
}

// AppendLabels writes labels, in node order: each NoLabel or a class id
// 0..2^31−1, no more than NumNodes in all. Only for a Writer created with
// Labels.
func (w *Writer) AppendLabels(labels []int32) error {
	if w.done {
		return ErrClosed
	}
	if w.lab == nil {
		return errors.New("featstore: AppendLabels on a store created without Options.Labels")
	}
	if w.labels+uint64(len(labels)) > uint64(w.m.NumNodes) {
		return fmt.Errorf("%w: more than %d labels: the graph has %d nodes", ErrShape, w.m.NumNodes, w.m.NumNodes)
	}
	if err := hook(stepAppend); err != nil {
		return err
	}
	var buf [4096]byte
	for len(labels) > 0 {
		k := min(len(labels), len(buf)/4)
		for i, l := range labels[:k] {
			if l < NoLabel {
				return fmt.Errorf("featstore: node %d: label %d: want %d (none) or >= 0", w.labels+uint64(i), l, NoLabel)
			}
			if l >= 0 {
				w.m.Labels.Labeled++
				w.maxLab = max(w.maxLab, l)
			}
			binary.LittleEndian.PutUint32(buf[4*i:], uint32(l))
		}
		if err := w.lab.write(buf[:4*k]); err != nil {
			return err
		}
		w.labels += uint64(k)
		labels = labels[k:]
	}
	return nil
}

// Close checks that every row (and label) was appended, makes the data
// files and their checksums durable, checks the manifest as a reader
// will (ErrBadManifest: nothing is replaced), gives the files their final
// names and writes features.json atomically; then it removes the files of
// the store it replaced. On error nothing of the new store remains and
// the old one is intact.
func (w *Writer) Close() error {
	if w.done {
		return ErrClosed
	}
	if err := w.finish(); err != nil {
		w.Abort()
		return err
	}
	w.done = true
	hook(stepCleanup) // a kill here is what the tests need; an error changes nothing now
	// The new store is committed; the old files are garbage. A failure to
	// remove them loses nothing: the next Create removes them.
	for _, f := range w.old {
		os.Remove(filepath.Join(w.dir, f))
	}
	atomicfile.SyncDir(w.dir)
	return nil
}

func (w *Writer) finish() error {
	if w.rows != uint64(w.m.NumNodes) {
		return fmt.Errorf("%w: %d rows written, the graph has %d nodes", ErrShape, w.rows, w.m.NumNodes)
	}
	if w.lab != nil {
		if w.labels != uint64(w.m.NumNodes) {
			return fmt.Errorf("%w: %d labels written, the graph has %d nodes", ErrShape, w.labels, w.m.NumNodes)
		}
		// int64: the largest label, 2^31−1, gives 2^31 classes.
		w.m.Labels.NumClasses = int64(w.maxLab) + 1
	}
	if err := hook(stepSync); err != nil {
		return err
	}
	for _, d := range []*dataWriter{w.feat, w.lab} {
		if d != nil {
			if err := d.close(); err != nil {
				return err
			}
		}
	}
	// The manifest is complete: check it as a reader will before anything
	// is renamed, so that a store no reader would accept never replaces
	// the one in place.
	w.m.Checksum = w.m.ComputeChecksum()
	if err := w.m.Validate(); err != nil {
		return fmt.Errorf("%w: the store packed would be refused: %v", ErrBadManifest, err)
	}
	for i, d := range []*dataWriter{w.feat, w.lab} {
		if d == nil {
			continue
		}
		if i == 1 {
			if err := hook(stepRename); err != nil {
				return err
			}
		}
		if err := d.rename(); err != nil {
			return err
		}
	}
	if err := atomicfile.SyncDir(w.dir); err != nil {
		return fmt.Errorf("featstore: %w", err)
	}
	if err := hook(stepManifest); err != nil {
		return err
	}
	b, err := json.MarshalIndent(&w.m, "", "  ")
	if err != nil {
		return fmt.Errorf("featstore: encoding manifest: %w", err)
	}
	path := filepath.Join(w.dir, ManifestFile)
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		// Only the directory's fsync may have failed after the rename:
		// then the manifest names files that Abort is about to remove.
		if m, rerr := ReadManifest(w.dir); rerr == nil && m.Features.File == w.m.Features.File {
			os.Remove(path)
		}
		return fmt.Errorf("featstore: writing %s: %w", ManifestFile, err)
	}
	return nil
}

// Abort removes what the Writer wrote; the directory's previous store,
// if any, is untouched. After Close it does nothing.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	for _, d := range []*dataWriter{w.feat, w.lab} {
		if d != nil {
			d.remove()
		}
	}
	return atomicfile.SyncDir(w.dir)
}

// Manifest returns the manifest the Writer writes (complete after Close).
func (w *Writer) Manifest() *Manifest { return &w.m }

// dataWriter writes one data file under a temporary name, and its
// checksums (the .crc file) under another, computing the CRC-32C of each
// span as the bytes pass: memory O(its buffers), whatever the file's size.
type dataWriter struct {
	f, cf        *os.File
	bw, cw       *bufio.Writer
	tmp, final   string
	ctmp, cfinal string
	df           *DataFile
	crc          uint32 // of the current span so far
	fill         int64  // bytes of the current span so far
	crcOfCRCs    uint32 // of the .crc file so far
	written      int64
	renamed      int // files renamed to their final names
	closed       bool
}

// writeBuf is the write buffer of a data file: large writes, O(1) memory.
const writeBuf = 1 << 20

func newDataWriter(dir string, df *DataFile) (*dataWriter, error) {
	d := &dataWriter{tmp: filepath.Join(dir, "."+df.File+".tmp"), final: filepath.Join(dir, df.File),
		ctmp: filepath.Join(dir, "."+df.CRCs.File+".tmp"), cfinal: filepath.Join(dir, df.CRCs.File), df: df}
	f, err := os.OpenFile(d.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("featstore: %w", err)
	}
	cf, err := os.OpenFile(d.ctmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		f.Close()
		os.Remove(d.tmp)
		return nil, fmt.Errorf("featstore: %w", err)
	}
	d.f, d.bw = f, bufio.NewWriterSize(f, writeBuf)
	d.cf, d.cw = cf, bufio.NewWriterSize(cf, 64<<10)
	return d, nil
}

func (d *dataWriter) write(b []byte) error {
	if d.written+int64(len(b)) > d.df.Size {
		return fmt.Errorf("%w: %s: more than %d bytes", ErrShape, d.df.File, d.df.Size)
	}
	for rest := b; len(rest) > 0; {
		k := min(int64(len(rest)), d.df.CRCSpan-d.fill)
		d.crc = crc32c.Update(d.crc, rest[:k])
		d.fill += k
		rest = rest[k:]
		if d.fill == d.df.CRCSpan {
			if err := d.endSpan(); err != nil {
				return err
			}
		}
	}
	if _, err := d.bw.Write(b); err != nil {
		return fmt.Errorf("featstore: writing %s: %w", d.df.File, err)
	}
	d.written += int64(len(b))
	return nil
}

// endSpan appends the current span's CRC-32C to the .crc file.
func (d *dataWriter) endSpan() error {
	var w [4]byte
	binary.LittleEndian.PutUint32(w[:], d.crc)
	d.crcOfCRCs = crc32c.Update(d.crcOfCRCs, w[:])
	d.crc, d.fill = 0, 0
	if _, err := d.cw.Write(w[:]); err != nil {
		return fmt.Errorf("featstore: writing %s: %w", d.df.CRCs.File, err)
	}
	return nil
}

// close ends the last span, then flushes, fsyncs and closes both
// temporary files; the .crc file's CRC goes to the manifest.
func (d *dataWriter) close() error {
	var err error
	if d.fill > 0 {
		err = d.endSpan()
	}
	d.df.CRCs.CRC32C = d.crcOfCRCs
	for _, x := range []struct {
		f    *os.File
		bw   *bufio.Writer
		name string
	}{{d.f, d.bw, d.df.File}, {d.cf, d.cw, d.df.CRCs.File}} {
		e := x.bw.Flush()
		if e == nil {
			e = x.f.Sync()
		}
		if cerr := x.f.Close(); e == nil {
			e = cerr
		}
		if e != nil && err == nil {
			err = fmt.Errorf("featstore: writing %s: %w", x.name, e)
		}
	}
	d.closed = true
	return err
}

// rename gives both files their final names.
func (d *dataWriter) rename() error {
	for _, p := range [][2]string{{d.tmp, d.final}, {d.ctmp, d.cfinal}} {
		if err := os.Rename(p[0], p[1]); err != nil {
			return fmt.Errorf("featstore: %w", err)
		}
		d.renamed++
	}
	return nil
}

func (d *dataWriter) remove() {
	if !d.closed {
		d.f.Close()
		d.cf.Close()
		d.closed = true
	}
	os.Remove(d.tmp)
	os.Remove(d.ctmp)
	if d.renamed > 0 {
		os.Remove(d.final)
	}
	if d.renamed > 1 {
		os.Remove(d.cfinal)
	}
}
