package featstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// DataFile describes one data file of the store: its name in the graph
// directory, the input it was packed from, its exact size, and its
// checksums: a CRC-32C of every CRCSpan bytes, in a .crc file.
type DataFile struct {
	File    string  `json:"file"`
	Source  string  `json:"source,omitempty"`
	Size    int64   `json:"size"`
	CRCSpan int64   `json:"crc_span"` // bytes each CRC-32C covers: a row of the features, a page of the labels
	CRCs    CRCFile `json:"crcs"`
}

// CRCFile names the file of a data file's checksums: one little-endian
// uint32 per span, the CRC-32C of its CRCSpan bytes (the last span
// shorter), and the CRC-32C of the whole .crc file, which features.json's
// own checksum covers in turn.
type CRCFile struct {
	File   string `json:"file"`
	CRC32C uint32 `json:"crc32c"`
}

// Spans returns the number of spans, and of CRCs, of the file.
func (f *DataFile) Spans() int64 { return (f.Size + f.CRCSpan - 1) / f.CRCSpan }

// SpanRange returns the byte offset and length of span i.
func (f *DataFile) SpanRange(i int64) (off, n int64) {
	off = i * f.CRCSpan
	return off, min(f.CRCSpan, f.Size-off)
}

// CRCFileSize returns the size of the .crc file: 4 bytes per span.
func (f *DataFile) CRCFileSize() int64 { return 4 * f.Spans() }

func (f *DataFile) validate(what string, size, span int64) error {
	m := dataName.FindStringSubmatch(f.File)
	if m == nil || m[3] != "bin" {
		return fmt.Errorf("%s.file %q: want a plain name like %s-1.bin", what, f.File, what)
	}
	if m[1] != what {
		return fmt.Errorf("%s.file %q: want a %s-G.bin", what, f.File, what)
	}
	if want := strings.TrimSuffix(f.File, ".bin") + ".crc"; f.CRCs.File != want {
		return fmt.Errorf("%s.crcs.file %q, want %q", what, f.CRCs.File, want)
	}
	if f.Size != size {
		return fmt.Errorf("%s.size %d, want %d for its shape", what, f.Size, size)
	}
	if f.CRCSpan != span {
		return fmt.Errorf("%s.crc_span %d, want %d", what, f.CRCSpan, span)
	}
	return nil
}

// dataName is the form of the name of a data file (.bin) or of its page
// checksums (.crc): the kind and the store's generation.
var dataName = regexp.MustCompile(`^(features|labels)-([0-9]+)\.(bin|crc)$`)

// Features describes the feature matrix.
type Features struct {
	DataFile
	DType    DType `json:"dtype"`
	Dim      int   `json:"dim"`
	RowBytes int64 `json:"row_bytes"` // Dim * DType.Size(): row u starts at u*RowBytes
}

// Labels describes the labels: one LabelDType per node, NoLabel for none.
type Labels struct {
	DataFile
	DType      string `json:"dtype"`
	NumClasses int64  `json:"num_classes"` // largest label + 1, up to MaxNumClasses
	Labeled    uint32 `json:"labeled"`     // nodes whose label is not NoLabel
}

// Manifest is the content of features.json.
type Manifest struct {
	Version   int                  `json:"version"`
	NumNodes  uint32               `json:"num_nodes"`
	Graph     chunkfmt.Fingerprint `json:"graph"` // the graph directory's manifest.json this store belongs to
	Features  Features             `json:"features"`
	Labels    *Labels              `json:"labels,omitempty"`
	CreatedBy string               `json:"created_by,omitempty"`
	// Checksum is the CRC-32C of the other fields' canonical encoding
	// (crc32c.OfJSON, as a state directory's config.json has), so that
	// an edit that keeps the manifest consistent — a dtype or a dim
	// changed, which would reinterpret every row — is refused.
	Checksum uint32 `json:"checksum"`
}

// ComputeChecksum returns the manifest's checksum: the CRC-32C of its
// encoding with Checksum zero.
func (m Manifest) ComputeChecksum() uint32 {
	m.Checksum = 0
	return crc32c.OfJSON(m)
}

// Validate checks the manifest's internal consistency: version, shape,
// sizes and file names. The checksum is ParseManifest's to check.
func (m *Manifest) Validate() error {
	if m.Version != FormatVersion {
		return fmt.Errorf("version %d: this reader supports version %d", m.Version, FormatVersion)
	}
	if m.Graph.NumNodes != m.NumNodes {
		return fmt.Errorf("num_nodes %d but graph.num_nodes %d", m.NumNodes, m.Graph.NumNodes)
	}
	f := &m.Features
	if f.DType.Size() == 0 {
		return fmt.Errorf("features.dtype %q: want float32, float16, int8 or uint8", f.DType)
	}
	if f.Dim <= 0 || f.Dim > MaxDim {
		return fmt.Errorf("features.dim %d: want 1..%d", f.Dim, MaxDim)
	}
	if f.RowBytes != int64(f.Dim)*int64(f.DType.Size()) {
		return fmt.Errorf("features.row_bytes %d, want dim*%d = %d", f.RowBytes, f.DType.Size(), int64(f.Dim)*int64(f.DType.Size()))
	}
	if err := f.validate("features", int64(m.NumNodes)*f.RowBytes, f.RowBytes); err != nil {
		return err
	}
	if l := m.Labels; l != nil {
		if l.DType != LabelDType {
			return fmt.Errorf("labels.dtype %q: want %q", l.DType, LabelDType)
		}
		if l.NumClasses < 0 || l.NumClasses > MaxNumClasses || l.Labeled > m.NumNodes || (l.Labeled > 0) != (l.NumClasses > 0) {
			return fmt.Errorf("labels: num_classes %d and labeled %d inconsistent for %d nodes (num_classes at most %d)", l.NumClasses, l.Labeled, m.NumNodes, int64(MaxNumClasses))
		}
		if err := l.validate("labels", int64(m.NumNodes)*4, LabelCRCSpan); err != nil {
			return err
		}
		if gen(l.File) != gen(f.File) {
			return fmt.Errorf("labels.file %q and features.file %q are of different generations", l.File, f.File)
		}
	}
	return nil
}

// gen returns the generation part of a data file's name ("" if none).
func gen(name string) string {
	if m := dataName.FindStringSubmatch(name); m != nil {
		return m[2]
	}
	return ""
}

// MaxDim is the largest feature dimension: a row must stay a modest read.
const MaxDim = 1 << 20

// ReadManifest reads and validates dir/features.json. It returns an error
// wrapping ErrNoFeatures when there is none, and one wrapping
// ErrBadManifest when it is not valid. It does not compare the store with
// the graph: Open and Verify do.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoFeatures, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("featstore: reading manifest: %w", err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseManifest decodes and validates the bytes of a features.json: its
// version first (a store of another format is named as such, with the
// command that rebuilds it), then its fields (unknown ones refused), its
// checksum and its consistency. Errors wrap ErrBadManifest.
func ParseManifest(b []byte) (*Manifest, error) {
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err == nil && v.Version != nil && *v.Version != FormatVersion {
		if *v.Version == 1 {
			return nil, fmt.Errorf("%w: version 1, which has one CRC-32C per 4 MiB block (too coarse to check a row as it is read) and no checksum of its own; this reader needs version %d, a CRC-32C per row: rebuild the store with `chunkify features FEATURES -o GRAPHDIR --force`", ErrBadManifest, FormatVersion)
		}
		return nil, fmt.Errorf("%w: version %d: this reader supports version %d", ErrBadManifest, *v.Version, FormatVersion)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrBadManifest)
	}
	if got := m.ComputeChecksum(); got != m.Checksum {
		return nil, fmt.Errorf("%w: checksum %08x, but its fields give %08x: features.json was edited or damaged since it was written; pack the store again (chunkify features --force)", ErrBadManifest, m.Checksum, got)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	return &m, nil
}

// namedFiles returns the data and checksum files that the features.json
// b names, read leniently: an invalid manifest (another version, a
// damaged or edited one) may still name a store's files, which a Writer
// replacing it must not remove before its own manifest lands — they may
// be the only copy of the rows, or the very input being packed.
func namedFiles(b []byte) []string {
	type file struct {
		File string `json:"file"`
		CRCs struct {
			File string `json:"file"`
		} `json:"crcs"`
	}
	var v struct {
		Features *file `json:"features"`
		Labels   *file `json:"labels"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	var names []string
	for _, f := range []*file{v.Features, v.Labels} {
		if f == nil {
			continue
		}
		for _, n := range []string{f.File, f.CRCs.File} {
			if dataName.MatchString(n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// checkGraph compares the store's manifest with the graph directory's.
func (m *Manifest) checkGraph(dir string) error {
	g, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		return err
	}
	return m.checkFingerprint(dir, g.Fingerprint())
}

// checkFingerprint compares the store's manifest with fp, the fingerprint
// of what it must belong to.
func (m *Manifest) checkFingerprint(dir string, fp chunkfmt.Fingerprint) error {
	if fp != m.Graph {
		return fmt.Errorf("%w: %s: features.json was packed for a graph of %d nodes, %d edges (chunk CRCs %08x); the directory holds %d nodes, %d edges (chunk CRCs %08x): pack the features again",
			ErrGraphMismatch, dir, m.Graph.NumNodes, m.Graph.NumEdges, m.Graph.ChunkCRCs, fp.NumNodes, fp.NumEdges, fp.ChunkCRCs)
	}
	return nil
}
