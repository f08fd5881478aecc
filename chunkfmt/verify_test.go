package chunkfmt

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// verifyFixture is a valid graph to corrupt: dedup on, self-loops dropped,
// several 1 KiB chunks.
type verifyFixture struct {
	adj  [][]uint32
	opts Options
}

func newVerifyFixture() verifyFixture {
	r := rand.New(rand.NewPCG(11, 12))
	adj := randomGraph(r, 300, 40, true)
	for v := range adj {
		a := adj[v][:0]
		for _, u := range adj[v] {
			if u != uint32(v) {
				a = append(a, u)
			}
		}
		adj[v] = a
	}
	// Chunk 1's first node gets at least 3 neighbors so corruptions have
	// something to break.
	return verifyFixture{adj: adj, opts: Options{Dedup: true, SelfLoops: "drop"}}
}

// corruption edits a copy of the graph directory. fixCRC then recomputes
// the manifest's CRCs so that the structural check, not the checksum, is
// what must catch it.
type corruption struct {
	name    string
	edit    func(t *testing.T, dir string, m *Manifest, data []byte) []byte
	fixCRC  bool
	chunk   int    // expected DefectError.Chunk; -2: not a DefectError
	node    int64  // expected Node, -2: don't care, -3: the node the edit reports in editedNode
	word    int64  // expected Word, -2: don't care, -3: editedWord
	target  error  // errors.Is target
	message string // must appear in the message
}

// firstNodeWithDegree returns a node of chunk c with at least d neighbors
// and the word offset of its first neighbor.
// editedNode is the node an edit corrupted (for node: -3).
var editedNode, editedWord int64

func firstNodeWithDegree(t *testing.T, m *Manifest, data []byte, c, d int) (uint32, int64) {
	t.Helper()
	w := Words(data[m.ChunkOffset(c) : m.ChunkOffset(c)+m.ChunkStoredSize(c)])
	ci := m.Chunks[c]
	for k := uint32(0); k < ci.NNodes; k++ {
		if int(w[3+k]-w[2+k]) >= d {
			editedNode = int64(ci.Start + k)
			return ci.Start + k, int64(w[2+k])
		}
	}
	t.Fatalf("chunk %d has no node of degree %d", c, d)
	return 0, 0
}

func putWord(data []byte, m *Manifest, c int, word int64, v uint32) {
	copy(data[m.ChunkOffset(c)+4*word:], EncodeWords(nil, []uint32{v}))
}

func getWord(data []byte, m *Manifest, c int, word int64) uint32 {
	return DecodeWords(nil, data[m.ChunkOffset(c)+4*word:][:4])[0]
}

func TestVerifyCorruptions(t *testing.T) {
	fx := newVerifyFixture()
	src := writeGraph(t, fx.adj, 1024, fx.opts)
	if err := Verify(src); err != nil {
		t.Fatalf("valid graph: %v", err)
	}
	m0, _ := ReadManifest(src)
	if len(m0.Chunks) < 4 {
		t.Fatalf("fixture has only %d chunks", len(m0.Chunks))
	}
	last := len(m0.Chunks) - 1
	cases := []corruption{
		{name: "crc in manifest", chunk: 2, node: -1, word: -1, message: "CRC-32C",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				m.Chunks[2].CRC32C ^= 1
				return data
			}},
		{name: "bit flip in neighbors", chunk: 1, node: -2, word: -2, message: "chunk 1",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				_, at := firstNodeWithDegree(t, m, data, 1, 1)
				data[m.ChunkOffset(1)+4*at+3] ^= 0x40 // a huge id
				return data
			}},
		{name: "unsorted", fixCRC: true, node: -3, chunk: 1, word: -2, message: "not sorted after",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				_, at := firstNodeWithDegree(t, m, data, 1, 2)
				a, b := getWord(data, m, 1, at), getWord(data, m, 1, at+1)
				putWord(data, m, 1, at, b)
				putWord(data, m, 1, at+1, a)
				return data
			}},
		{name: "duplicate under dedup", fixCRC: true, node: -3, chunk: 1, word: -2, message: "duplicate neighbor",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				_, at := firstNodeWithDegree(t, m, data, 1, 2)
				putWord(data, m, 1, at+1, getWord(data, m, 1, at))
				return data
			}},
		{name: "id not below num_nodes", fixCRC: true, node: -3, chunk: 2, word: -2, message: "not below num_nodes 300",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				v, at := firstNodeWithDegree(t, m, data, 2, 1)
				d := len(fx.adj[v])
				putWord(data, m, 2, at+int64(d)-1, 300) // last neighbor: still sorted
				return data
			}},
		{name: "self-loop under drop", fixCRC: true, chunk: 1, node: -3, word: -3, message: "self-loop",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				// A node whose first neighbor can become itself and stay
				// sorted: degree 1, or second neighbor above it.
				for v := m.Chunks[1].Start; v < m.Chunks[1].End; v++ {
					a := fx.adj[v]
					if len(a) == 1 || (len(a) > 1 && a[1] > v) {
						at := int64(getWord(data, m, 1, 2+int64(v-m.Chunks[1].Start)))
						putWord(data, m, 1, at, v)
						editedNode, editedWord = int64(v), at
						return data
					}
				}
				t.Fatal("no suitable node in chunk 1")
				return nil
			}},
		{name: "wrong n_nodes", fixCRC: true, chunk: 3, node: -1, word: 0, message: "n_nodes",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				putWord(data, m, 3, 0, m.Chunks[3].NNodes+1)
				return data
			}},
		{name: "wrong start_node", fixCRC: true, chunk: 3, node: -1, word: 1, message: "start_node",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				putWord(data, m, 3, 1, m.Chunks[3].Start-1)
				return data
			}},
		{name: "off_0 not header end", fixCRC: true, chunk: 1, node: 41, word: 2, message: "off_0",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				putWord(data, m, 1, 2, getWord(data, m, 1, 2)+1)
				return data
			}},
		{name: "offsets decrease", fixCRC: true, node: -3, chunk: 1, word: -2, message: "before the previous offset",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				v, _ := firstNodeWithDegree(t, m, data, 1, 1)
				k := int64(v - m.Chunks[1].Start)
				putWord(data, m, 1, 3+k, getWord(data, m, 1, 2+k)-1)
				return data
			}},
		{name: "last offset beyond chunk", fixCRC: true, chunk: 1, node: 79, word: -2, message: "beyond the chunk",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				putWord(data, m, 1, 2+int64(m.Chunks[1].NNodes), 1<<20)
				return data
			}},
		{name: "nonzero fill", fixCRC: true, chunk: 0, node: -1, word: 255, message: "nonzero word",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				if m.Chunks[0].FillBytes < 4 {
					t.Skip("chunk 0 has no fill")
				}
				putWord(data, m, 0, 255, 7)
				return data
			}},
		{name: "nonzero padding of last chunk", chunk: last, node: -1, word: -2, message: "nonzero word",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				if m.Chunks[last].FillBytes == 0 {
					t.Skip("last chunk has no padding")
				}
				data[len(data)-1] = 1
				return data
			}},
		{name: "truncated file", chunk: last, node: -1, word: -1, message: "file size",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				return data[:len(data)-SectorSize]
			}},
		{name: "extra bytes", chunk: -1, node: -1, word: -1, message: "file size",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				return append(data, make([]byte, SectorSize)...)
			}},
		{name: "chunks.info start", chunk: 2, node: -1, word: 2, message: "chunks.info: chunk 2",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				info := readFile(t, dir, IndexFile)
				info[8]++
				os.WriteFile(filepath.Join(dir, IndexFile), info, 0o644)
				return data
			}},
		{name: "chunks.info short", chunk: -1, node: -1, word: -1, message: "chunks.info",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				info := readFile(t, dir, IndexFile)
				os.WriteFile(filepath.Join(dir, IndexFile), info[:len(info)-4], 0o644)
				return data
			}},
		{name: "missing manifest", chunk: -2, target: ErrNoManifest, message: "manifest.json",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				os.Remove(filepath.Join(dir, ManifestFile))
				return data
			}},
		{name: "manifest counts disagree", chunk: -2, target: ErrBadManifest, message: "num_edges",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				m.NumEdges++
				return data
			}},
		{name: "manifest not json", chunk: -2, target: ErrBadManifest, message: "invalid manifest",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				m.Version = -1 // replaced below by garbage
				return data
			}},
		{name: "manifest from the future", chunk: -2, target: ErrBadManifest, message: "version 2",
			edit: func(t *testing.T, dir string, m *Manifest, data []byte) []byte {
				m.Version = 2
				return data
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{ChunksFile, IndexFile, ManifestFile} {
				if err := os.WriteFile(filepath.Join(dir, name), readFile(t, src, name), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, _ := ReadManifest(dir)
			data := tc.edit(t, dir, m, readFile(t, dir, ChunksFile))
			if tc.fixCRC {
				for i := range m.Chunks {
					off := m.ChunkOffset(i)
					m.Chunks[i].CRC32C = crc32c.Checksum(data[off : off+m.ChunkStoredSize(i)])
				}
			}
			os.WriteFile(filepath.Join(dir, ChunksFile), data, 0o644)
			if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
				writeManifest(dir, m)
				if m.Version == -1 {
					os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"version": 1, "num_nodes": `), 0o644)
				}
			}
			err := Verify(dir)
			if err == nil {
				t.Fatal("Verify accepted the corruption")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("message %q does not contain %q", err, tc.message)
			}
			if tc.target != nil && !errors.Is(err, tc.target) {
				t.Fatalf("error %v is not %v", err, tc.target)
			}
			if tc.chunk == -2 {
				return
			}
			var d *DefectError
			if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%T is not a *DefectError", err)
			}
			if tc.node == -3 {
				tc.node = editedNode
			}
			if tc.word == -3 {
				tc.word = editedWord
			}
			if d.Chunk != tc.chunk || (tc.node != -2 && d.Node != tc.node) || (tc.word != -2 && d.Word != tc.word) {
				t.Fatalf("defect at chunk %d node %d word %d, want chunk %d node %d word %d", d.Chunk, d.Node, d.Word, tc.chunk, tc.node, tc.word)
			}
			if d.Chunk >= 0 && d.File == ChunksFile && d.Node >= 0 && (d.Node < int64(d.Start) || d.Node >= int64(d.End)) {
				t.Fatalf("node %d outside its chunk [%d,%d)", d.Node, d.Start, d.End)
			}
		})
	}
}

func TestVerifyContext(t *testing.T) {
	dir := writeGraph(t, newVerifyFixture().adj, 1024, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := VerifyContext(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("VerifyContext with a cancelled context: %v", err)
	}
}

func TestDefectMessage(t *testing.T) {
	m := &Manifest{Chunks: []ChunkInfo{{}, {}, {}, {Start: 120, End: 181}}}
	err := defect(m, "", 3, 133, 912, "neighbor %d at word %d not sorted after %d", 7, 912, 9)
	if got, want := err.Error(), "chunkfmt: chunk 3 (nodes 120..180): node 133: neighbor 7 at word 912 not sorted after 9"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// BenchmarkVerify verifies a ~70 MB graph (warm page cache) and, in the
// same run, computes only the CRC-32C of the same bytes, which Verify must
// do anyway: the ratio is the cost of the structural checks.
func BenchmarkVerify(b *testing.B) {
	g := randomCSR(41, 1_000_000, 8)
	dir := b.TempDir()
	writeCSR(b, dir, g, 8<<20)
	data := readFile(b, dir, ChunksFile)
	gb := float64(len(data)) / 1e9
	var vr, cr []float64
	for b.Loop() {
		t0 := time.Now()
		if err := Verify(dir); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		sink = int(crc32c.Checksum(data))
		t2 := time.Now()
		vr = append(vr, gb/t1.Sub(t0).Seconds())
		cr = append(cr, gb/t2.Sub(t1).Seconds())
	}
	ratios := make([]float64, len(vr))
	for k := range vr {
		ratios[k] = vr[k] / cr[k]
	}
	b.ReportMetric(median(vr), "verify_GB/s")
	b.ReportMetric(median(cr), "crc_only_GB/s")
	b.ReportMetric(median(ratios), "verify/crc")
}
