package gpu_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// TestCSRFromGraphChecksReads: the GPU backend's loading (which needs no
// GPU) refuses a graph whose chunk fails its CRC-32C, and, under a manifest
// rewritten with the corrupt chunk's CRC, a neighbor id beyond num_nodes,
// naming the chunk and node, before anything reaches the device.
func TestCSRFromGraphChecksReads(t *testing.T) {
	const n, chunk = 300, 512
	dir := filepath.Join(t.TempDir(), "graph")
	w, err := chunkfmt.NewWriter(dir, n, chunk, chunkfmt.Options{Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < n; v++ {
		if err := w.Append([]uint32{v / 2, v/2 + 1}[:1+v%2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const c = 2
	m0, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	load := func() error {
		g, err := chunkfmt.Open(dir)
		if err != nil {
			return err
		}
		defer g.Close()
		_, _, err = gpu.CSRFromGraph(g)
		// Open's path, chunk by chunk, must fail the same way and hand
		// the sink nothing from the bad chunk.
		var before uint64 // edges of the chunks before c
		for _, ci := range m0.Chunks[:c] {
			before += ci.NEdges
		}
		var got uint64 // edges the sink received
		sink := sinkFunc{indices: func(first uint64, a []uint32) error {
			got = first + uint64(len(a))
			return nil
		}}
		if serr := gpu.StreamCSR(g, sink); fmt.Sprint(serr) != fmt.Sprint(err) {
			t.Errorf("StreamCSR: %v\nCSRFromGraph: %v", serr, err)
		}
		if err != nil && got > before {
			t.Errorf("the sink got %d edges, past the %d before the corrupt chunk %d", got, before, c)
		}
		return err
	}
	if err := load(); err != nil {
		t.Fatal(err)
	}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, chunkfmt.ChunksFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The first neighbor of chunk c's first node: word off_0.
	pos := m.ChunkOffset(c) + 4*int64(3+m.Chunks[c].NNodes)
	binary.LittleEndian.PutUint32(data[pos:], n+5)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := load(); !errors.Is(err, chunkfmt.ErrChecksum) || !strings.Contains(err.Error(), "chunk 2 ") {
		t.Fatalf("flipped adjacency: %v, want ErrChecksum naming chunk 2", err)
	}
	m.Chunks[c].CRC32C = crc32c.Checksum(data[m.ChunkOffset(c) : m.ChunkOffset(c)+m.ChunkStoredSize(c)])
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, chunkfmt.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = load()
	var d *chunkfmt.DefectError
	if !errors.As(err, &d) || d.Chunk != c || d.Node != int64(m.Chunks[c].Start) || !strings.Contains(err.Error(), "not below num_nodes") {
		t.Fatalf("id beyond num_nodes under a matching CRC: %v", err)
	}
	t.Log(err)
}
