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

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// DataFile describes one data file of the store: its name in the graph
// directory, the input it was packed from, its exact size and the CRC-32C
// of every block of BlockSize bytes (the last one shorter).
type DataFile struct {
	File      string   `json:"file"`
	Source    string   `json:"source,omitempty"`
	Size      int64    `json:"size"`
	BlockSize int64    `json:"block_size"`
	BlockCRCs []uint32 `json:"block_crc32c"`
}

// Blocks returns the number of blocks of the file.
func (f *DataFile) Blocks() int { return int((f.Size + f.BlockSize - 1) / f.BlockSize) }

// BlockRange returns the byte offset and length of block i.
func (f *DataFile) BlockRange(i int) (off, n int64) {
	off = int64(i) * f.BlockSize
	return off, min(f.BlockSize, f.Size-off)
}

// CheckBlock checks b, the whole content of block i, against its CRC-32C.
// The error is a *DefectError (errors.Is ErrCorrupt).
func (f *DataFile) CheckBlock(i int, b []byte) error {
	if i < 0 || i >= f.Blocks() {
		return fmt.Errorf("featstore: %s: block %d out of range [0,%d)", f.File, i, f.Blocks())
	}
	if _, n := f.BlockRange(i); int64(len(b)) != n {
		return defect(f, i, -1, "%d bytes, want %d", len(b), n)
	}
	if got := crc32c.Checksum(b); got != f.BlockCRCs[i] {
		return defect(f, i, -1, "CRC-32C %08x, manifest says %08x", got, f.BlockCRCs[i])
	}
	return nil
}

func (f *DataFile) validate(what string, size int64) error {
	if !dataName.MatchString(f.File) {
		return fmt.Errorf("%s.file %q: want a plain name like features-1.bin", what, f.File)
	}
	if f.Size != size {
		return fmt.Errorf("%s.size %d, want %d for its shape", what, f.Size, size)
	}
	if f.BlockSize <= 0 || f.BlockSize%blockAlign != 0 {
		return fmt.Errorf("%s.block_size %d: want a positive multiple of %d", what, f.BlockSize, blockAlign)
	}
	if len(f.BlockCRCs) != f.Blocks() {
		return fmt.Errorf("%s: %d block CRCs for %d blocks", what, len(f.BlockCRCs), f.Blocks())
	}
	return nil
}

// dataName is the form of a data file's name: the kind and the store's
// generation.
var dataName = regexp.MustCompile(`^(features|labels)-[0-9]+\.bin$`)

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
	NumClasses int32  `json:"num_classes"` // largest label + 1
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
}

// Validate checks the manifest's internal consistency: version, shape,
// sizes and block lists.
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
	if err := f.validate("features", int64(m.NumNodes)*f.RowBytes); err != nil {
		return err
	}
	if l := m.Labels; l != nil {
		if l.DType != LabelDType {
			return fmt.Errorf("labels.dtype %q: want %q", l.DType, LabelDType)
		}
		if l.NumClasses < 0 || l.Labeled > m.NumNodes || (l.Labeled > 0) != (l.NumClasses > 0) {
			return fmt.Errorf("labels: num_classes %d and labeled %d inconsistent for %d nodes", l.NumClasses, l.Labeled, m.NumNodes)
		}
		if err := l.validate("labels", int64(m.NumNodes)*4); err != nil {
			return err
		}
		if l.File == f.File {
			return fmt.Errorf("labels.file and features.file are both %q", l.File)
		}
	}
	return nil
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

// ParseManifest decodes and validates the bytes of a features.json.
// Errors wrap ErrBadManifest.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrBadManifest)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	return &m, nil
}

// checkGraph compares the store's manifest with the graph directory's.
func (m *Manifest) checkGraph(dir string) error {
	g, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		return err
	}
	if fp := g.Fingerprint(); fp != m.Graph {
		return fmt.Errorf("%w: %s: features.json was packed for a graph of %d nodes, %d edges (chunk CRCs %08x); the directory holds %d nodes, %d edges (chunk CRCs %08x): pack the features again",
			ErrGraphMismatch, dir, m.Graph.NumNodes, m.Graph.NumEdges, m.Graph.ChunkCRCs, fp.NumNodes, fp.NumEdges, fp.ChunkCRCs)
	}
	return nil
}
