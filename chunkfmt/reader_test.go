package chunkfmt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/internal/crc32c"
	"github.com/streamsampler/streamsampler/internal/hostorder"
)

func TestReaderChunks(t *testing.T) {
	dir := writeGraph(t, goldenAdj(), 512, Options{})
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, dir, ChunksFile)
	r, err := NewReader(bytes.NewReader(data), m)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	want := goldenWords()
	for i := 0; i < 3; i++ {
		for _, rd := range []*Reader{r, g.Reader} {
			b, err := rd.Chunk(i)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 512 || !bytes.Equal(b, data[i*512:(i+1)*512]) {
				t.Fatalf("Chunk(%d): %d bytes", i, len(b))
			}
			w, err := rd.ChunkWords(i)
			if err != nil || !slices.Equal(w, want[i*128:(i+1)*128]) {
				t.Fatalf("ChunkWords(%d) = %v, %v", i, w, err)
			}
		}
	}
	if _, err := r.Chunk(3); err == nil {
		t.Fatal("Chunk(3) of 3 succeeded")
	}
	if _, err := r.Chunk(-1); err == nil {
		t.Fatal("Chunk(-1) succeeded")
	}
	for v, a := range goldenAdj() {
		d, err := g.Degree(uint32(v))
		if err != nil || d != len(a) {
			t.Fatalf("Degree(%d) = %d, %v", v, d, err)
		}
	}
	if _, err := g.Neighbors(6); err == nil {
		t.Fatal("Neighbors(6) of 6 nodes succeeded")
	}
	// The mapped graph's neighbors are views into the mapping (where the
	// host's byte order allows it).
	nb, _ := g.Neighbors(2)
	if !hostorder.LittleEndian {
		t.Log("big-endian host: Neighbors copies")
	} else if ch, _ := g.Chunk(1); &nb[0] != &Words(ch)[6] {
		t.Fatal("Neighbors of a mapped graph copied")
	}
	// A reader whose size disagrees with the manifest.
	if _, err := NewReader(bytes.NewReader(data[:1000]), m); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewReader on a short file: %v", err)
	}
}

func TestReaderCorruptOffsets(t *testing.T) {
	dir := writeGraph(t, goldenAdj(), 512, Options{})
	m, _ := ReadManifest(dir)
	data := readFile(t, dir, ChunksFile)
	// Node 3's end offset (chunk 1, word 2+1+1) points past the used words.
	copy(data[512+4*4:], EncodeWords(nil, []uint32{500}))
	r, _ := NewReader(bytes.NewReader(data), m)
	if _, err := r.Neighbors(3); !errors.Is(err, ErrChecksum) {
		t.Fatalf("Neighbors(3) on a chunk that fails its CRC: %v, want ErrChecksum", err)
	}
	// With a CRC that matches the corrupt chunk (a manifest rewritten
	// with it), the bounds check still catches the offset.
	m.Chunks[1].CRC32C = crc32c.Checksum(data[512:1024])
	r, _ = NewReader(bytes.NewReader(data), m)
	_, err := r.Neighbors(3)
	var d *DefectError
	if !errors.As(err, &d) || d.Chunk != 1 || d.Node != 3 || d.Word != 3 {
		t.Fatalf("Neighbors(3) on a corrupt offset: %v", err)
	}
	t.Log(err)
}

func TestGraphOpenErrors(t *testing.T) {
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("Open of an empty dir: %v", err)
	}
	dir := writeGraph(t, goldenAdj(), 512, Options{})
	p := filepath.Join(dir, ChunksFile)
	if err := os.Truncate(p, 1024); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a truncated graph: %v", err)
	}
	dir = writeGraph(t, goldenAdj(), 512, Options{})
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Neighbors(1); err == nil {
		t.Fatal("Neighbors after Close succeeded")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWordsPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	w := make([]uint32, 1000)
	for i := range w {
		w[i] = r.Uint32()
	}
	b := EncodeWords(nil, w)
	if !bytes.Equal(b, wordBytes(w)) {
		t.Fatal("wordBytes differs from EncodeWords")
	}
	if !slices.Equal(Words(b), w) || !slices.Equal(DecodeWords(nil, b), w) {
		t.Fatal("Words/DecodeWords do not invert EncodeWords")
	}
	// Misaligned input takes the copying path.
	mis := append([]byte{0}, b...)[1:]
	if !slices.Equal(Words(mis), w) {
		t.Fatal("Words on misaligned bytes")
	}
	if len(Words(nil)) != 0 || len(Words([]byte{1, 2})) != 0 {
		t.Fatal("Words of a short slice")
	}
}

// BenchmarkNeighbors reads random nodes' adjacency from a 1M-node graph:
// memory-mapped (zero copy), and through a plain *os.File (two preads a
// node). The peer, measured in the same run, is the same lookup in an
// in-memory CSR; the ratio is the format's overhead on a warm page cache.
func BenchmarkNeighbors(b *testing.B) {
	g := randomCSR(31, 1_000_000, 8)
	dir := b.TempDir()
	writeCSR(b, dir, g, 1<<20)
	r := rand.New(rand.NewPCG(1, 1))
	nodes := make([]uint32, 1<<16)
	for i := range nodes {
		nodes[i] = r.Uint32N(g.numNodes())
	}
	peer := func() float64 { // ns per lookup in plain CSR
		t0 := time.Now()
		s := 0
		for k := 0; k < 50; k++ {
			for _, v := range nodes {
				s += len(g.adj(v))
			}
		}
		sink = s
		return float64(time.Since(t0).Nanoseconds()) / float64(50*len(nodes))
	}
	run := func(b *testing.B, rd *Reader) {
		s := 0
		k := 0
		for b.Loop() {
			nb, err := rd.Neighbors(nodes[k&(len(nodes)-1)])
			if err != nil {
				b.Fatal(err)
			}
			s += len(nb)
			k++
		}
		sink = s
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns/peer(), "x_in_memory_csr")
	}
	b.Run("mmap", func(b *testing.B) {
		gr, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer gr.Close()
		run(b, gr.Reader)
	})
	b.Run("pread", func(b *testing.B) {
		m, err := ReadManifest(dir)
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, ChunksFile))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		rd, err := NewReader(f, m)
		if err != nil {
			b.Fatal(err)
		}
		run(b, rd)
	})
}

var sink int
