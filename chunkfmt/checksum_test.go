package chunkfmt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

func TestZeroExtend(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, la := range []int{0, 1, 13, 4096} {
		for _, n := range []int64{0, 1, 3, 512, 4095, 1 << 20} {
			a := make([]byte, la)
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			want := crc32c.Checksum(append(bytes.Clone(a), make([]byte, n)...))
			if got := zeroExtend(crc32c.Checksum(a), n); got != want {
				t.Fatalf("%d bytes + %d zeros: %08x, want %08x", la, n, got, want)
			}
		}
	}
}

// TestCheckChunk checks every prefix length a reader uses (the 512-byte
// read size, a page, the whole stored chunk) of every chunk of a
// multi-chunk graph, and that one flipped bit anywhere in the prefix is a
// *ChecksumError naming the file, chunk, nodes and byte range.
func TestCheckChunk(t *testing.T) {
	dir := writeGraph(t, randomGraph(rand.New(rand.NewPCG(1, 2)), 2000, 40, true), 8192, Options{Dedup: true})
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, dir, ChunksFile)
	if len(m.Chunks) < 3 {
		t.Fatalf("%d chunks", len(m.Chunks))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range m.Chunks {
		off, stored := m.ChunkOffset(i), m.ChunkStoredSize(i)
		for _, n := range []int64{m.ChunkReadSize(i), min((m.Chunks[i].BytesUsed+4095)/4096*4096, stored), stored} {
			b := bytes.Clone(data[off : off+n])
			if err := m.CheckChunk("g/edges.chunks", i, b); err != nil {
				t.Fatalf("chunk %d, %d bytes: %v", i, n, err)
			}
			pos := r.Int64N(n)
			b[pos] ^= 1 << r.UintN(8)
			err := m.CheckChunk("g/edges.chunks", i, b)
			var ce *ChecksumError
			if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("chunk %d, bit flipped at byte %d of %d: %v", i, pos, n, err)
			}
			if ce.Chunk != i || ce.Offset != off || ce.Length != n || ce.Want != m.Chunks[i].CRC32C || ce.Got == ce.Want {
				t.Fatalf("chunk %d: %+v", i, ce)
			}
			for _, want := range []string{"g/edges.chunks", "chunk ", "nodes ", "bytes "} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("%q lacks %q", err, want)
				}
			}
		}
	}
	if err := m.CheckChunk("x", 0, make([]byte, m.ChunkStoredSize(0)+512)); err == nil || errors.Is(err, ErrChecksum) {
		t.Fatalf("more bytes than the chunk stores: %v", err)
	}
	if err := m.CheckChunk("x", len(m.Chunks), nil); err == nil {
		t.Fatal("chunk out of range accepted")
	}
}

// TestCheckChunkSum checks that the CRC of a chunk's prefix taken in
// pieces and joined with crc32c.Combine passes exactly where CheckChunk
// does, for random cut points, and that a flipped bit in any piece fails.
func TestCheckChunkSum(t *testing.T) {
	dir := writeGraph(t, randomGraph(rand.New(rand.NewPCG(5, 6)), 2000, 40, true), 8192, Options{Dedup: true})
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, dir, ChunksFile)
	r := rand.New(rand.NewPCG(7, 8))
	sum := func(b []byte, cuts int) uint32 {
		var crc uint32
		for len(b) > 0 {
			k := len(b)
			if cuts > 0 {
				k = r.IntN(len(b)) + 1
				cuts--
			}
			crc = crc32c.Combine(crc, crc32c.Checksum(b[:k]), int64(k))
			b = b[k:]
		}
		return crc
	}
	for i := range m.Chunks {
		off, n := m.ChunkOffset(i), m.ChunkReadSize(i)
		b := bytes.Clone(data[off : off+n])
		for cuts := range 4 {
			if err := m.CheckChunkSum("g", i, sum(b, cuts), n); err != nil {
				t.Fatalf("chunk %d, %d cuts: %v", i, cuts, err)
			}
		}
		b[r.Int64N(n)] ^= 4
		if err := m.CheckChunkSum("g", i, sum(b, 3), n); !errors.Is(err, ErrChecksum) {
			t.Fatalf("chunk %d, a flipped bit: %v", i, err)
		}
	}
	if err := m.CheckChunkSum("g", -1, 0, 0); err == nil {
		t.Fatal("chunk -1 accepted")
	}
}

func TestCheckHeaders(t *testing.T) {
	dir := writeGraph(t, goldenAdj(), 512, Options{})
	m, _ := ReadManifest(dir)
	data := readFile(t, dir, ChunksFile)
	if err := CheckHeaders(bytes.NewReader(data), m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		word int64
		msg  string
	}{
		{0, "chunk 1 (nodes 2..4): header n_nodes 4 at word 0, chunks.info and the manifest say 3"},
		{1, "chunk 1 (nodes 2..4): header start_node 3 at word 1, chunks.info and the manifest say 2"},
	} {
		b := bytes.Clone(data)
		b[512+4*tc.word]++
		err := CheckHeaders(bytes.NewReader(b), m)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("word %d: %v, want %q", tc.word, err, tc.msg)
		}
	}
}

// BenchmarkCheckChunk is the CRC-32C check of one 1 MiB chunk read
// (hardware CRC through hash/crc32); its rate bounds what checked reads
// cost an epoch: bytes read ÷ this rate.
func BenchmarkCheckChunk(b *testing.B) {
	const size = 1 << 20
	m := &Manifest{ChunkSize: size, Chunks: []ChunkInfo{{BytesUsed: size}}}
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	m.Chunks[0].CRC32C = crc32c.Checksum(buf)
	b.SetBytes(size)
	for b.Loop() {
		if err := m.CheckChunk(ChunksFile, 0, buf); err != nil {
			b.Fatal(err)
		}
	}
}
