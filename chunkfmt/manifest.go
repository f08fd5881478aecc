package chunkfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// ChunkInfo describes one chunk of edges.chunks as recorded in the
// manifest. The chunk holds nodes [Start, End).
type ChunkInfo struct {
	Start     uint32 `json:"start"`
	End       uint32 `json:"end"`
	NNodes    uint32 `json:"n_nodes"`
	NEdges    uint64 `json:"n_edges"`
	BytesUsed int64  `json:"bytes_used"` // header and neighbors: (3 + n_nodes + n_edges) * 4
	FillBytes int64  `json:"fill_bytes"` // zero bytes stored after BytesUsed
	CRC32C    uint32 `json:"crc32c"`     // CRC-32C (Castagnoli) of the chunk's stored bytes
}

// Manifest is the content of manifest.json: what makes a directory a graph.
type Manifest struct {
	Version   int         `json:"version"`
	NumNodes  uint32      `json:"num_nodes"`
	NumEdges  uint64      `json:"num_edges"`
	ChunkSize int64       `json:"chunk_size"`
	Options   Options     `json:"options"`
	Chunks    []ChunkInfo `json:"chunks"`
	MaxDegree uint32      `json:"max_degree"`
	CreatedBy string      `json:"created_by,omitempty"`
}

// ChunkOffset is the byte offset of chunk i in edges.chunks.
func (m *Manifest) ChunkOffset(i int) int64 { return int64(i) * m.ChunkSize }

// ChunkStoredSize is the number of bytes chunk i occupies in edges.chunks:
// ChunkSize, except for the last chunk, which is BytesUsed rounded up to
// SectorSize.
func (m *Manifest) ChunkStoredSize(i int) int64 {
	if i == len(m.Chunks)-1 {
		return roundUp(m.Chunks[i].BytesUsed)
	}
	return m.ChunkSize
}

// ChunkReadSize is the number of bytes a reader needs from the start of
// chunk i: BytesUsed rounded up to SectorSize (the rest is zero fill).
func (m *Manifest) ChunkReadSize(i int) int64 { return roundUp(m.Chunks[i].BytesUsed) }

// FileSize is the exact size edges.chunks must have.
func (m *Manifest) FileSize() int64 {
	k := len(m.Chunks)
	if k == 0 {
		return 0
	}
	return m.ChunkOffset(k-1) + m.ChunkStoredSize(k-1)
}

// Starts returns the start node of every chunk: the content of chunks.info.
func (m *Manifest) Starts() []uint32 {
	s := make([]uint32, len(m.Chunks))
	for i, c := range m.Chunks {
		s[i] = c.Start
	}
	return s
}

// Validate checks the manifest's internal consistency: version, options,
// chunk size, and chunks that are contiguous, cover [0, NumNodes), and
// whose counts add up.
func (m *Manifest) Validate() error {
	if m.Version != FormatVersion {
		return fmt.Errorf("version %d: this reader supports version %d", m.Version, FormatVersion)
	}
	if err := checkChunkSize(m.ChunkSize); err != nil {
		return err
	}
	if m.NumNodes > MaxNodes {
		return fmt.Errorf("num_nodes %d: more than the maximum %d", m.NumNodes, MaxNodes)
	}
	switch m.Options.SelfLoops {
	case SelfLoopsKeep, SelfLoopsDrop:
	default:
		return fmt.Errorf("options.self_loops %q: want %q or %q", m.Options.SelfLoops, SelfLoopsKeep, SelfLoopsDrop)
	}
	if m.NumNodes == 0 {
		if len(m.Chunks) != 0 || m.NumEdges != 0 {
			return fmt.Errorf("num_nodes 0 with %d chunks and %d edges: an empty graph has neither", len(m.Chunks), m.NumEdges)
		}
		return nil
	}
	if len(m.Chunks) == 0 {
		return fmt.Errorf("num_nodes %d but no chunks", m.NumNodes)
	}
	if uint64(len(m.Chunks)) > uint64(m.NumNodes) {
		return fmt.Errorf("%d chunks for %d nodes: every chunk holds at least one node", len(m.Chunks), m.NumNodes)
	}
	var edges uint64
	next := uint32(0)
	for i, c := range m.Chunks {
		if c.Start != next {
			return fmt.Errorf("chunk %d: start %d, want %d (chunks must be contiguous from node 0)", i, c.Start, next)
		}
		if c.End <= c.Start || c.End > m.NumNodes {
			return fmt.Errorf("chunk %d: node range [%d,%d) empty or beyond num_nodes %d", i, c.Start, c.End, m.NumNodes)
		}
		if c.NNodes != c.End-c.Start {
			return fmt.Errorf("chunk %d: n_nodes %d, want end-start = %d", i, c.NNodes, c.End-c.Start)
		}
		if c.NEdges > uint64(m.ChunkSize/4) {
			return fmt.Errorf("chunk %d: n_edges %d cannot fit in a chunk of %d bytes", i, c.NEdges, m.ChunkSize)
		}
		want := int64(headerWords(uint64(c.NNodes))+c.NEdges) * 4
		if c.BytesUsed != want {
			return fmt.Errorf("chunk %d: bytes_used %d, want (3+n_nodes+n_edges)*4 = %d", i, c.BytesUsed, want)
		}
		if c.BytesUsed > m.ChunkSize {
			return fmt.Errorf("chunk %d: bytes_used %d larger than chunk_size %d", i, c.BytesUsed, m.ChunkSize)
		}
		if stored := m.ChunkStoredSize(i); c.FillBytes != stored-c.BytesUsed {
			return fmt.Errorf("chunk %d: fill_bytes %d, want %d (stored size %d minus bytes_used)", i, c.FillBytes, stored-c.BytesUsed, stored)
		}
		edges += c.NEdges
		next = c.End
	}
	if next != m.NumNodes {
		return fmt.Errorf("chunks cover nodes [0,%d), want [0,%d)", next, m.NumNodes)
	}
	if edges != m.NumEdges {
		return fmt.Errorf("chunks hold %d edges, num_edges says %d", edges, m.NumEdges)
	}
	return nil
}

// ReadManifest reads and validates dir/manifest.json. It returns an error
// wrapping ErrNoManifest when the file does not exist (the directory is not
// a graph) and one wrapping ErrBadManifest when it is not valid.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoManifest, path)
	}
	if err != nil {
		return nil, fmt.Errorf("chunkfmt: reading manifest: %w", err)
	}
	m, err := parseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadManifest, path, err)
	}
	return m, nil
}

// ParseManifest decodes and validates the bytes of a manifest.json. Errors
// wrap ErrBadManifest.
func ParseManifest(b []byte) (*Manifest, error) {
	m, err := parseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	return m, nil
}

func parseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// writeManifest writes dir/manifest.json atomically: a temporary file in
// the same directory, fsynced, renamed over the final name, and the
// directory fsynced, so that a crash leaves either no manifest or a whole
// one. The temporary is written through createFile, the package's
// fault-injection seam, under the fixed name manifestTemp that Abort and
// chunkify's output check know.
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("chunkfmt: encoding manifest: %w", err)
	}
	b = append(b, '\n')
	tmp := filepath.Join(dir, manifestTemp)
	if err := writeSynced(tmp, b); err != nil {
		os.Remove(tmp)
		return err
	}
	final := filepath.Join(dir, ManifestFile)
	if err := atomicfile.Rename(tmp, final); err != nil {
		// Either the rename failed (tmp remains) or the directory sync
		// did (the manifest is in place, but maybe not durably): remove
		// both, so that the caller's error path sees no manifest. NewWriter
		// removed any older one, so nothing else is lost.
		os.Remove(tmp)
		os.Remove(final)
		return fmt.Errorf("chunkfmt: %w", err)
	}
	return nil
}

const manifestTemp = ".manifest.json.tmp"

// syncDir makes the entries of dir durable (NewWriter's removal of an
// old manifest).
func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("chunkfmt: syncing directory %s: %w", dir, err)
	}
	return nil
}
