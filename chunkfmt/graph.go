package chunkfmt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"
)

// Graph is a graph directory opened for reading, with edges.chunks
// memory-mapped: Neighbors and Chunk return slices of the mapping without
// copying. Open checks that the manifest, chunks.info, the file size and
// every chunk's header (start node and node count) agree; the Reader
// checks each chunk's CRC-32C the first time it is used (Verify checks
// everything). Close unmaps the file; slices obtained before must not be
// used after.
type Graph struct {
	Dir      string
	Manifest *Manifest
	Index    *Index
	*Reader

	mm mmap.MMap
}

// Open opens the graph in dir. A directory without a valid manifest is not
// a graph: the error then wraps ErrNoManifest or ErrBadManifest.
func Open(dir string) (*Graph, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	ix, err := LoadIndex(dir, m)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ChunksFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	if st.Size() != m.FileSize() {
		return nil, sizeDefect(m, st.Size())
	}
	g := &Graph{Dir: dir, Manifest: m, Index: ix}
	var mem []byte
	if st.Size() > 0 {
		g.mm, err = mmap.Map(f, mmap.RDONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("chunkfmt: mapping %s: %w", path, err)
		}
		mem = g.mm
	} else {
		mem = []byte{}
	}
	g.Reader = &Reader{r: bytes.NewReader(mem), m: m, ix: ix, mem: mem, file: path, checked: make([]atomic.Bool, len(m.Chunks))}
	if err := CheckHeaders(g.Reader.r, m); err != nil {
		g.Close()
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return g, nil
}

// LoadIndex reads dir's chunks.info and checks it against the manifest m:
// one start per chunk, each equal to the manifest's. The error, a
// *DefectError, names the chunk and both values.
func LoadIndex(dir string, m *Manifest) (*Index, error) {
	path := filepath.Join(dir, IndexFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chunkfmt: %w", err)
	}
	if len(b) != 4*len(m.Chunks) {
		return nil, defect(m, IndexFile, -1, -1, -1, "%d bytes, want %d (4 per chunk, %d chunks)", len(b), 4*len(m.Chunks), len(m.Chunks))
	}
	starts := DecodeWords(make([]uint32, 0, len(m.Chunks)), b)
	for i, s := range starts {
		if s != m.Chunks[i].Start {
			return nil, defect(m, IndexFile, i, -1, int64(i), "start %d at word %d, manifest says %d", s, i, m.Chunks[i].Start)
		}
	}
	return NewIndex(starts, m.NumNodes)
}

func sizeDefect(m *Manifest, size int64) *DefectError {
	want := m.FileSize()
	c := -1
	if size < want && m.ChunkSize > 0 {
		c = int(size / m.ChunkSize) // the first chunk that is not whole
	}
	return defect(m, ChunksFile, c, -1, -1, "file size %d bytes, want %d for %d chunks of %d bytes (last padded to %d)",
		size, want, len(m.Chunks), m.ChunkSize, SectorSize)
}

// Close unmaps edges.chunks.
func (g *Graph) Close() error {
	if g.mm == nil {
		return nil
	}
	err := g.mm.Unmap()
	g.mm = nil
	if g.Reader != nil {
		g.Reader.mem = nil
		g.Reader.r = errReaderAt{}
	}
	if err != nil {
		return fmt.Errorf("chunkfmt: unmapping %s: %w", filepath.Join(g.Dir, ChunksFile), err)
	}
	return nil
}

var errGraphClosed = errors.New("chunkfmt: graph closed")

// errReaderAt makes reads after Close fail instead of touching unmapped
// memory.
type errReaderAt struct{}

func (errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errGraphClosed }
