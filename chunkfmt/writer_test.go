package chunkfmt

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// goldenAdj is the hand-made graph of the golden test: 6 nodes in chunks
// of 512 bytes (128 words). Node 2 has 121 neighbors (repeats allowed
// without dedup), so nodes 0-1 fill chunk 0, nodes 2-4 fill chunk 1
// exactly (128 words, no fill) and node 5 is alone in the padded last
// chunk.
func goldenAdj() [][]uint32 {
	var n2 []uint32
	for i := 0; i < 41; i++ {
		n2 = append(n2, 0)
	}
	for i := 0; i < 40; i++ {
		n2 = append(n2, 3)
	}
	for i := 0; i < 40; i++ {
		n2 = append(n2, 5)
	}
	return [][]uint32{{1, 2, 5}, {0}, n2, {}, {4}, {0, 1, 2, 3, 4}}
}

// goldenWords is edges.chunks of goldenAdj, word by word, built by hand
// from the format's definition.
func goldenWords() []uint32 {
	chunk0 := []uint32{
		2, 0, // n_nodes, start_node
		5, 8, 9, // off_0 = 3+2; node 0 has 3 neighbors, node 1 has 1
		1, 2, 5, // node 0
		0, // node 1
	}
	chunk1 := []uint32{
		3, 2, // nodes 2..4
		6, 127, 127, 128, // node 2: [6,127), node 3: empty, node 4: [127,128)
	}
	chunk1 = append(chunk1, goldenAdj()[2]...)
	chunk1 = append(chunk1, 4) // node 4's self-loop
	chunk2 := []uint32{
		1, 5, // node 5 alone
		4, 9,
		0, 1, 2, 3, 4,
	}
	pad := func(c []uint32) []uint32 { return append(c, make([]uint32, 128-len(c))...) }
	var all []uint32
	all = append(all, pad(chunk0)...)
	all = append(all, chunk1...) // exactly 128 words
	all = append(all, pad(chunk2)...)
	return all
}

func TestGolden(t *testing.T) {
	if n := len(goldenWords()); n != 3*128 {
		t.Fatalf("hand-made words: %d, want %d", n, 3*128)
	}
	dir := writeGraph(t, goldenAdj(), 512, Options{})
	got := readFile(t, dir, ChunksFile)
	want := EncodeWords(nil, goldenWords())
	if !bytes.Equal(got, want) {
		gw := DecodeWords(nil, got)
		for i := range min(len(gw), len(goldenWords())) {
			if gw[i] != goldenWords()[i] {
				t.Fatalf("edges.chunks differs from the hand-made words first at word %d: got %d, want %d (len %d, want %d)", i, gw[i], goldenWords()[i], len(got), len(want))
			}
		}
		t.Fatalf("edges.chunks: %d bytes, want %d", len(got), len(want))
	}
	golden := filepath.Join("testdata", "golden6.chunks")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gb, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, gb) {
		t.Fatalf("edges.chunks differs from %s", golden)
	}
	if info := readFile(t, dir, IndexFile); !bytes.Equal(info, EncodeWords(nil, []uint32{0, 2, 5})) {
		t.Fatalf("chunks.info = %x", info)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantChunks := []ChunkInfo{
		{Start: 0, End: 2, NNodes: 2, NEdges: 4, BytesUsed: 36, FillBytes: 476},
		{Start: 2, End: 5, NNodes: 3, NEdges: 122, BytesUsed: 512, FillBytes: 0},
		{Start: 5, End: 6, NNodes: 1, NEdges: 5, BytesUsed: 36, FillBytes: 476},
	}
	for i := range wantChunks {
		wantChunks[i].CRC32C = crc32.Checksum(want[i*512:(i+1)*512], crc32.MakeTable(crc32.Castagnoli))
	}
	if !slices.Equal(m.Chunks, wantChunks) {
		t.Fatalf("manifest chunks = %+v\nwant %+v", m.Chunks, wantChunks)
	}
	if m.NumNodes != 6 || m.NumEdges != 131 || m.ChunkSize != 512 || m.MaxDegree != 121 || m.Version != FormatVersion || m.Options.SelfLoops != SelfLoopsKeep {
		t.Fatalf("manifest = %+v", m)
	}
}

// TestWriteReadRandom writes random graphs with tiny chunks and reads them
// back through both readers; it also checks that packing is greedy: no
// chunk but the last could have taken the next node.
func TestWriteReadRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 40; iter++ {
		n := 1 + r.Uint32N(300)
		chunkSize := int64(512 * (1 + r.IntN(4)))
		dedup := r.IntN(2) == 0
		maxDeg := int(chunkSize/4) - 4 // the largest degree that fits
		adj := randomGraph(r, n, maxDeg, dedup)
		if iter%5 == 0 {
			adj[r.IntN(len(adj))] = slices.Repeat([]uint32{0}, maxDeg) // exactly fills an empty chunk
			dedup = false
		}
		t.Run(fmt.Sprintf("n%d_cs%d_dedup%v", n, chunkSize, dedup), func(t *testing.T) {
			dir := writeGraph(t, adj, chunkSize, Options{Dedup: dedup})
			g, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			checkAdjacency(t, g.Reader, adj)
			f, err := os.Open(filepath.Join(dir, ChunksFile))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fr, err := NewReader(f, g.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			checkAdjacency(t, fr, adj)
			m := g.Manifest
			var edges uint64
			for _, a := range adj {
				edges += uint64(len(a))
			}
			if m.NumEdges != edges {
				t.Fatalf("num_edges %d, want %d", m.NumEdges, edges)
			}
			for i, c := range m.Chunks {
				if i+1 < len(m.Chunks) {
					next := uint64(len(adj[c.End]))
					if (headerWords(uint64(c.NNodes)+1)+c.NEdges+next)*4 <= uint64(chunkSize) {
						t.Fatalf("chunk %d ends at node %d although node %d (degree %d) fits", i, c.End, c.End, next)
					}
				}
				for v := c.Start; v < c.End; v++ {
					if g.ChunkOf(v) != i || g.Index.ChunkOf(v) != i {
						t.Fatalf("ChunkOf(%d) = %d, want %d", v, g.ChunkOf(v), i)
					}
				}
				if got := m.ChunkStoredSize(i); (i+1 < len(m.Chunks) && got != chunkSize) || got%SectorSize != 0 || got < c.BytesUsed {
					t.Fatalf("chunk %d stored size %d", i, got)
				}
			}
			st, _ := f.Stat()
			if st.Size() != m.FileSize() || st.Size()%SectorSize != 0 {
				t.Fatalf("file size %d, manifest %d", st.Size(), m.FileSize())
			}
			if err := Verify(dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEmptyGraphs(t *testing.T) {
	t.Run("zero nodes", func(t *testing.T) {
		dir := writeGraph(t, nil, 512, Options{})
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Chunks) != 0 || m.NumNodes != 0 || m.FileSize() != 0 {
			t.Fatalf("manifest %+v", m)
		}
		if len(readFile(t, dir, ChunksFile)) != 0 || len(readFile(t, dir, IndexFile)) != 0 {
			t.Fatal("files of an empty graph are not empty")
		}
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if g.NumChunks() != 0 || len(g.Index.ByChunk([]uint32{0, 1})) != 0 {
			t.Fatal("empty graph has chunks")
		}
		if _, err := g.Neighbors(0); err == nil {
			t.Fatal("Neighbors(0) of an empty graph succeeded")
		}
		g.Close()
		if err := Verify(dir); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no edges", func(t *testing.T) {
		adj := make([][]uint32, 1000) // 1000 degree-0 nodes: 125 per 512-byte chunk
		dir := writeGraph(t, adj, 512, Options{})
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if g.NumChunks() != 8 || g.Manifest.NumEdges != 0 {
			t.Fatalf("%d chunks, %d edges", g.NumChunks(), g.Manifest.NumEdges)
		}
		for v := uint32(0); v < 1000; v++ {
			nb, err := g.Neighbors(v)
			if err != nil || len(nb) != 0 {
				t.Fatalf("Neighbors(%d) = %v, %v", v, nb, err)
			}
		}
		if err := Verify(dir); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNodeTooLarge(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, 200, 512, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]uint32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(make([]uint32, 124)); err != nil { // 4+124 = 128 words: fits an empty chunk
		t.Fatal(err)
	}
	err = w.Append(make([]uint32, 125))
	var tl *NodeTooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrNodeTooLarge) {
		t.Fatalf("Append: %v, want *NodeTooLargeError", err)
	}
	if tl.Node != 2 || tl.Degree != 125 || tl.MinChunkSize != 1024 || tl.ChunkSize != 512 {
		t.Fatalf("%+v", tl)
	}
	for _, s := range []string{"node 2", "degree 125", "1024"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
	if err := w.Append(nil); !errors.Is(err, ErrNodeTooLarge) {
		t.Fatalf("Append after failure: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrNodeTooLarge) {
		t.Fatalf("Close after failure: %v", err)
	}
	if names := dirFiles(t, dir); len(names) != 0 {
		t.Fatalf("files left after failed Close: %v", names)
	}
	if _, err := ReadManifest(dir); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("ReadManifest: %v", err)
	}
	if got := MinChunkSizeFor(125); got != 1024 {
		t.Fatalf("MinChunkSizeFor(125) = %d", got)
	}
}

func TestAppendValidation(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		adj  [][]uint32
		want string
	}{
		{"unsorted", Options{}, [][]uint32{{1}, {3, 2}}, "node 1: neighbor 2 at position 1 not sorted after 3"},
		{"out of range", Options{}, [][]uint32{{4}}, "node 0: neighbor 4 at position 0 is not below the number of nodes 4"},
		{"duplicate under dedup", Options{Dedup: true}, [][]uint32{{1, 1}}, "node 0: duplicate neighbor 1"},
		{"self-loop under drop", Options{SelfLoops: "drop"}, [][]uint32{{1}, {0, 1}}, "node 1: self-loop"},
		{"too many nodes", Options{}, [][]uint32{{}, {}, {}, {}, {}}, "node 4: all 4 nodes were already appended"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewWriter(dir, 4, 512, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var last error
			for _, a := range tc.adj {
				if last = w.Append(a); last != nil {
					break
				}
			}
			if !errors.Is(last, ErrBadAdjacency) || !strings.Contains(last.Error(), tc.want) {
				t.Fatalf("got %v, want %q", last, tc.want)
			}
			if err := w.Close(); err == nil {
				t.Fatal("Close succeeded after a failed Append")
			}
			if names := dirFiles(t, dir); len(names) != 0 {
				t.Fatalf("files left: %v", names)
			}
		})
	}
	// Duplicates and self-loops are fine without dedup / with "keep".
	writeGraph(t, [][]uint32{{0, 0, 1}, {1}}, 512, Options{SelfLoops: "keep"})
}

func TestNewWriterArgs(t *testing.T) {
	for _, cs := range []int64{0, -512, 100, 513, MaxChunkSize + SectorSize} {
		if _, err := NewWriter(t.TempDir(), 1, cs, Options{}); err == nil {
			t.Errorf("chunk size %d accepted", cs)
		}
	}
	if _, err := NewWriter(t.TempDir(), MaxNodes+1, 512, Options{}); err == nil {
		t.Error("MaxNodes+1 nodes accepted")
	}
	if _, err := NewWriter(t.TempDir(), 1, 512, Options{SelfLoops: "maybe"}); err == nil {
		t.Error("self_loops \"maybe\" accepted")
	}
}

func TestCloseShort(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, 3, 512, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Append([]uint32{1})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "only 1 of 3 nodes") {
		t.Fatalf("Close: %v", err)
	}
	if names := dirFiles(t, dir); len(names) != 0 {
		t.Fatalf("files left: %v", names)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestAbort(t *testing.T) {
	// Overwriting a graph: the old manifest goes first, Abort removes the
	// rest, and the directory is no longer a graph.
	dir := writeGraph(t, goldenAdj(), 512, Options{})
	w, err := NewWriter(dir, 6, 512, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("old manifest still there: %v", err)
	}
	w.Append([]uint32{1})
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if names := dirFiles(t, dir); len(names) != 0 {
		t.Fatalf("files left after Abort: %v", names)
	}
	if err := w.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Abort: %v", err)
	}
	// Abort after a successful Close keeps the graph.
	dir2 := t.TempDir()
	w2, _ := NewWriter(dir2, 1, 512, Options{})
	w2.Append(nil)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir2); err != nil {
		t.Fatalf("Abort after Close removed the graph: %v", err)
	}
	if w2.Manifest() == nil || w2.Manifest().NumNodes != 1 {
		t.Fatal("Writer.Manifest after Close")
	}
}

// faultyFile fails every write once limit bytes have been written across
// all files (a disk that fills up), or fails Sync.
type faultyFile struct {
	*os.File
	budget   *int64
	syncFail bool
}

var errDiskFull = errors.New("injected: no space left on device")

func (f *faultyFile) Write(b []byte) (int, error) {
	if int64(len(b)) > *f.budget {
		n := int(max(*f.budget, 0))
		f.File.Write(b[:n])
		*f.budget = 0
		return n, errDiskFull
	}
	*f.budget -= int64(len(b))
	return f.File.Write(b)
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if int64(len(b)) > *f.budget {
		*f.budget = 0
		return 0, errDiskFull
	}
	*f.budget -= int64(len(b))
	return f.File.WriteAt(b, off)
}

func (f *faultyFile) Sync() error {
	if f.syncFail {
		return errDiskFull
	}
	return f.File.Sync()
}

// TestWriteFaults makes the disk fill up after every interesting number of
// bytes: inside a chunk, at chunk boundaries, in chunks.info, in the
// manifest. Every run must fail naming the file, and leave no manifest
// and no files.
func TestWriteFaults(t *testing.T) {
	adj := randomGraph(rand.New(rand.NewPCG(3, 4)), 400, 60, false)
	ref := writeGraph(t, adj, 1024, Options{})
	total := int64(len(readFile(t, ref, ChunksFile)))
	infoLen := int64(len(readFile(t, ref, IndexFile)))
	orig := createFile
	defer func() { createFile = orig }()
	limits := []int64{0, 1, 511, 1024, 1025, total / 2, total - 1, total, total + 3, total + infoLen, total + infoLen + 10}
	var edges uint64
	for _, a := range adj {
		edges += uint64(len(a))
	}
	defer func(s int64) { syncEvery = s }(syncEvery)
	// hinted: SizeHint makes the last chunk stream (header written last,
	// with WriteAt) and background fsyncs run every 2 KiB.
	for _, hinted := range []bool{false, true} {
		syncEvery = 64 << 20
		if hinted {
			syncEvery = 2048
		}
		for _, limit := range limits {
			for _, syncFail := range []bool{false, true} {
				if syncFail && limit != 0 {
					continue
				}
				budget := limit
				if syncFail {
					budget = 1 << 40
				}
				createFile = func(name string) (syncWriter, error) {
					f, err := os.Create(name)
					if err != nil {
						return nil, err
					}
					return &faultyFile{File: f, budget: &budget, syncFail: syncFail}, nil
				}
				dir := t.TempDir()
				w, err := NewWriter(dir, uint32(len(adj)), 1024, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if hinted {
					w.SizeHint(edges)
				}
				var werr error
				for _, a := range adj {
					if werr = w.Append(a); werr != nil {
						break
					}
				}
				cerr := w.Close()
				if !errors.Is(cerr, errDiskFull) {
					t.Fatalf("limit %d sync %v: Close = %v (Append %v), want the injected error", limit, syncFail, cerr, werr)
				}
				if werr != nil && !errors.Is(werr, errDiskFull) {
					t.Fatalf("limit %d: Append = %v", limit, werr)
				}
				if !strings.Contains(cerr.Error(), dir) {
					t.Fatalf("limit %d: error %q does not name the file", limit, cerr)
				}
				if names := dirFiles(t, dir); len(names) != 0 {
					t.Fatalf("limit %d: files left: %v", limit, names)
				}
				if _, err := ReadManifest(dir); !errors.Is(err, ErrNoManifest) {
					t.Fatalf("limit %d: %v", limit, err)
				}
			}
		}
	}
	createFile = orig
	// Sanity: without faults the same graph writes fine.
	if _, err := os.Stat(filepath.Join(writeGraph(t, adj, 1024, Options{}), ManifestFile)); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("no manifest")
	}
}

// BenchmarkWriter measures the Writer's throughput on a ~130 MB graph and,
// in the same iterations, a plain sequential write of the very same bytes
// (1 MiB writes, then fsync) to the same file system: the ratio is what the
// format costs over raw I/O. Both include the final fsync. Figures are
// medians over iterations.
//
// Sub-benchmark "fsync" is the real thing; "nosync" replaces fsync by a
// no-op for both (through the test hook), so that the page cache, not the
// disk, is the peer and the CPU cost of the format shows.
func BenchmarkWriter(b *testing.B) {
	g := randomCSR(21, 2_000_000, 8)
	b.Run("fsync", func(b *testing.B) { benchWriter(b, g, true, false) })
	// streamed: the whole graph in one chunk with SizeHint, as chunkify
	// builds graphs smaller than a chunk: no chunk buffer, header last.
	b.Run("streamed-fsync", func(b *testing.B) { benchWriter(b, g, true, true) })
	b.Run("nosync", func(b *testing.B) {
		orig := createFile
		defer func() { createFile = orig }()
		createFile = func(name string) (syncWriter, error) {
			f, err := os.Create(name)
			if err != nil {
				return nil, err
			}
			return noSync{f}, nil
		}
		benchWriter(b, g, false, false)
	})
}

type noSync struct{ *os.File }

func (noSync) Sync() error { return nil }

func benchWriter(b *testing.B, g *csrGraph, fsync, streamed bool) {
	dir := b.TempDir()
	chunkSize := int64(16 << 20)
	writeCSR := writeCSR
	if streamed {
		chunkSize = 128 << 20
		writeCSR = func(tb testing.TB, dir string, g *csrGraph, chunkSize int64) {
			w, err := NewWriter(dir, g.numNodes(), chunkSize, Options{})
			if err != nil {
				tb.Fatal(err)
			}
			w.SizeHint(uint64(len(g.nb)))
			for v := uint32(0); v < g.numNodes(); v++ {
				if err := w.Append(g.adj(v)); err != nil {
					tb.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	writeCSR(b, filepath.Join(dir, "ref"), g, chunkSize)
	data, err := os.ReadFile(filepath.Join(dir, "ref", ChunksFile))
	if err != nil {
		b.Fatal(err)
	}
	gb := float64(len(data)) / 1e9
	var wr, pl []float64
	i := 0
	for b.Loop() {
		d := filepath.Join(dir, fmt.Sprint(i))
		i++
		t0 := time.Now()
		writeCSR(b, d, g, chunkSize)
		t1 := time.Now()
		f, err := os.Create(filepath.Join(d, "plain"))
		if err != nil {
			b.Fatal(err)
		}
		for p := 0; p < len(data); p += 1 << 20 {
			if _, err := f.Write(data[p:min(p+1<<20, len(data))]); err != nil {
				b.Fatal(err)
			}
		}
		if fsync {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
		t2 := time.Now()
		wr = append(wr, gb/t1.Sub(t0).Seconds())
		pl = append(pl, gb/t2.Sub(t1).Seconds())
		os.RemoveAll(d)
	}
	ratios := make([]float64, len(wr))
	for k := range wr {
		ratios[k] = wr[k] / pl[k]
	}
	b.ReportMetric(median(wr), "writer_GB/s")
	b.ReportMetric(median(pl), "plain_GB/s")
	b.ReportMetric(median(ratios), "writer/plain")
	b.ReportMetric(float64(len(data))/1e6, "MB")
}

func TestSortedBelow(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	naive := func(a []uint32, strict bool, n uint32) bool {
		for i, v := range a {
			if v >= n || (i > 0 && (v < a[i-1] || (strict && v == a[i-1]))) {
				return false
			}
		}
		return true
	}
	for iter := 0; iter < 20000; iter++ {
		a := make([]uint32, r.IntN(6))
		for i := range a {
			a[i] = r.Uint32N(5)
			if r.IntN(50) == 0 {
				a[i] = ^uint32(0) - r.Uint32N(2)
			}
		}
		if r.IntN(2) == 0 {
			slices.Sort(a)
		}
		strict, n := r.IntN(2) == 0, r.Uint32N(7)
		if iter%7 == 0 {
			n = ^uint32(0)
		}
		if got, want := sortedBelow(a, strict, n), naive(a, strict, n); got != want {
			t.Fatalf("sortedBelow(%v, %v, %d) = %v, want %v", a, strict, n, got, want)
		}
	}
}

// TestFormatDocExample pins the worked example of docs/FORMAT.md.
func TestFormatDocExample(t *testing.T) {
	dir := writeGraph(t, [][]uint32{{1, 2}, {2}, {}, {0, 1, 2}}, 512, Options{Dedup: true, SelfLoops: "drop"})
	want := append([]uint32{4, 0, 7, 9, 10, 10, 13, 1, 2, 2, 0, 1, 2}, make([]uint32, 128-13)...)
	if got := DecodeWords(nil, readFile(t, dir, ChunksFile)); !slices.Equal(got, want) {
		t.Fatalf("edges.chunks = %v", got)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Chunks[0]; c.BytesUsed != 52 || c.FillBytes != 460 || c.CRC32C != 3421054267 || m.MaxDegree != 3 {
		t.Fatalf("manifest chunk %+v", c)
	}
}

// writeHinted writes adj like writeGraph, after SizeHint(hint) when hint
// is not negative, and returns the directory or the first error.
func writeHinted(t *testing.T, adj [][]uint32, chunkSize int64, opts Options, hint int64) (string, error) {
	t.Helper()
	dir := t.TempDir()
	w, err := NewWriter(dir, uint32(len(adj)), chunkSize, opts)
	if err != nil {
		t.Fatal(err)
	}
	if hint >= 0 {
		w.SizeHint(uint64(hint))
	}
	for _, a := range adj {
		if err := w.Append(a); err != nil {
			w.Abort()
			return dir, err
		}
	}
	return dir, w.Close()
}

// TestSizeHint checks that a hinted writer (pre-sized buffer, or the last
// chunk streamed to the file with its header written afterwards) writes
// exactly the bytes of an unhinted one, and that a hint exceeded while
// streaming is an error, not a corrupt file.
func TestSizeHint(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 20; iter++ {
		n := 1 + r.Uint32N(400)
		chunkSize := int64(512 * (1 + r.IntN(8)))
		if iter%3 == 0 {
			chunkSize = 1 << 20 // the whole graph in one (streamed) chunk
		}
		dedup := r.IntN(2) == 0
		adj := randomGraph(r, n, min(int(chunkSize/4)-4, 300), dedup)
		var total int64
		for _, a := range adj {
			total += int64(len(a))
		}
		ref, err := writeHinted(t, adj, chunkSize, Options{Dedup: dedup}, -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, hint := range []int64{total, total + 1 + r.Int64N(100), 1 << 40} {
			dir, err := writeHinted(t, adj, chunkSize, Options{Dedup: dedup}, hint)
			if err != nil {
				t.Fatalf("n %d chunk %d hint %d (total %d): %v", n, chunkSize, hint, total, err)
			}
			for _, f := range []string{ChunksFile, IndexFile, ManifestFile} {
				a, _ := os.ReadFile(filepath.Join(ref, f))
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil || !bytes.Equal(a, b) {
					t.Fatalf("n %d chunk %d hint %d (total %d): %s differs from the unhinted writer's (%v)", n, chunkSize, hint, total, f, err)
				}
			}
			if err := Verify(dir); err != nil {
				t.Fatal(err)
			}
		}
		if total > 0 && headerWords(uint64(n))+uint64(total) <= uint64(chunkSize/4) {
			// The writer streams from node 0 and must notice the lie.
			dir, err := writeHinted(t, adj, chunkSize, Options{Dedup: dedup}, total-1)
			if err == nil || !strings.Contains(err.Error(), "SizeHint") {
				t.Fatalf("hint below the total: err %v", err)
			}
			if _, serr := os.Stat(filepath.Join(dir, ChunksFile)); !errors.Is(serr, fs.ErrNotExist) {
				t.Fatalf("hint below the total: %s left behind (%v)", ChunksFile, serr)
			}
		}
	}
}
