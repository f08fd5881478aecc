package chunkfmt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// fuzzGraph is the small valid graph the fuzz targets corrupt: 40 nodes,
// dedup, 512-byte chunks.
type fuzzGraph struct {
	adj      [][]uint32
	data     []byte
	manifest []byte
	m        *Manifest
}

var (
	fuzzOnce    sync.Once
	fuzzFixture fuzzGraph
)

func getFuzzGraph(t testing.TB) *fuzzGraph {
	fuzzOnce.Do(func() {
		adj := randomGraph(rand.New(rand.NewPCG(13, 14)), 60, 60, true)
		dir, err := os.MkdirTemp("", "chunkfmt-fuzz")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		w, err := NewWriter(dir, uint32(len(adj)), 512, Options{Dedup: true})
		if err != nil {
			panic(err)
		}
		for _, a := range adj {
			if err := w.Append(a); err != nil {
				panic(err)
			}
		}
		if err := w.Close(); err != nil {
			panic(err)
		}
		fuzzFixture.adj = adj
		fuzzFixture.data, _ = os.ReadFile(filepath.Join(dir, ChunksFile))
		fuzzFixture.manifest, _ = os.ReadFile(filepath.Join(dir, ManifestFile))
		fuzzFixture.m, err = ReadManifest(dir)
		if err != nil {
			panic(err)
		}
	})
	if len(fuzzFixture.m.Chunks) < 3 {
		t.Fatalf("fuzz fixture has %d chunks, want several", len(fuzzFixture.m.Chunks))
	}
	return &fuzzFixture
}

func cloneManifest(m *Manifest) *Manifest {
	c := *m
	c.Chunks = slices.Clone(m.Chunks)
	return &c
}

// onlyReaderAt hides Size so that NewReader accepts any length.
type onlyReaderAt struct{ io.ReaderAt }

// refNeighbors decodes node's adjacency straight from the format's
// definition, for comparison with Reader.
func refNeighbors(data []byte, m *Manifest, node uint32) []uint32 {
	for c, ci := range m.Chunks {
		if node >= ci.Start && node < ci.End {
			off := m.ChunkOffset(c)
			w := DecodeWords(nil, data[off:off+m.ChunkStoredSize(c)])
			k := node - ci.Start
			return w[w[2+k]:w[3+k]]
		}
	}
	return nil
}

// readAll reads every node and chunk through r, checking the bounds of
// what it returns; it returns the adjacency read (nil entries for errors).
func readAll(t *testing.T, r *Reader, m *Manifest) [][]uint32 {
	out := make([][]uint32, m.NumNodes)
	for v := uint32(0); v < m.NumNodes; v++ {
		nb, err := r.Neighbors(v)
		d, derr := r.Degree(v)
		// Degree reads only the offsets, so it may succeed where
		// Neighbors hits the end of a truncated file, not the reverse.
		if (err == nil && derr != nil) || (err == nil && d != len(nb)) {
			t.Fatalf("node %d: Neighbors (%d, %v) and Degree (%d, %v) disagree", v, len(nb), err, d, derr)
		}
		if err == nil {
			c := r.ChunkOf(v)
			if int64(len(nb))*4 > m.Chunks[c].BytesUsed {
				t.Fatalf("node %d: %d neighbors from a chunk of %d bytes", v, len(nb), m.Chunks[c].BytesUsed)
			}
			out[v] = slices.Clone(nb)
			if out[v] == nil {
				out[v] = []uint32{}
			}
		}
	}
	for i := range m.Chunks {
		if b, err := r.Chunk(i); err == nil && int64(len(b)) != m.ChunkReadSize(i) {
			t.Fatalf("Chunk(%d): %d bytes, want %d", i, len(b), m.ChunkReadSize(i))
		}
	}
	return out
}

// withCRCsOf returns a copy of m whose chunk CRCs are those of data's
// chunks (where data holds the whole chunk).
func withCRCsOf(m *Manifest, data []byte) *Manifest {
	c := *m
	c.Chunks = slices.Clone(m.Chunks)
	for i := range c.Chunks {
		off, n := c.ChunkOffset(i), c.ChunkStoredSize(i)
		if off+n <= int64(len(data)) {
			c.Chunks[i].CRC32C = crc32c.Checksum(data[off : off+n])
		}
	}
	return &c
}

// FuzzReader reads bytes as edges.chunks under a valid manifest, through
// the ReaderAt path and, when the size is right, the in-memory (mapped)
// path: neither may panic, both must agree, and whatever Verify accepts
// must read back as the format defines it. The bytes are the fixture's
// edges.chunks changed by the input (xor mutations as FuzzVerify's, cut
// short, then extended by tail), not the input itself: a small input keeps
// the fuzzer's minimization of each new one cheap (raw file-sized inputs
// ran at under one exec a second) while reaching every byte of the file.
func FuzzReader(f *testing.F) {
	fg := getFuzzGraph(f)
	f.Add([]byte{}, uint16(0), []byte{})                       // the graph as written
	f.Add([]byte{}, uint16(len(fg.data)-512), []byte{})        // the first chunk alone
	f.Add([]byte{}, uint16(len(fg.data)), []byte{})            // nothing
	f.Add([]byte{8, 0, 1}, uint16(0), []byte{})                // off_0 of chunk 0
	f.Add([]byte{40, 2, 0x80}, uint16(0), []byte{})            // a word of chunk 1
	f.Add([]byte{}, uint16(0), []byte{1, 2, 3, 4, 5, 6, 7, 8}) // longer than the manifest says
	f.Fuzz(func(t *testing.T, muts []byte, cut uint16, tail []byte) {
		data := slices.Clone(fg.data)
		for i := 0; i+2 < len(muts); i += 3 {
			pos := (int(muts[i]) | int(muts[i+1])<<8) % len(data)
			data[pos] ^= muts[i+2]
		}
		data = append(data[:len(data)-int(cut)%(len(data)+1)], tail...)
		m := fg.m
		r, err := NewReader(onlyReaderAt{bytes.NewReader(data)}, m)
		if err != nil {
			t.Fatal(err)
		}
		viaReaderAt := readAll(t, r, m)
		// Under the manifest's own CRCs, whatever reads back is what was
		// written: a corruption is an error, never another adjacency.
		for v, nb := range viaReaderAt {
			if nb != nil && !slices.Equal(nb, fg.adj[v]) {
				t.Fatalf("node %d reads %v through a checked Reader, written %v", v, nb, fg.adj[v])
			}
		}
		// Under CRCs recomputed over data (a manifest rewritten to match
		// the corruption), the offset bounds checks alone must hold.
		m = withCRCsOf(m, data)
		r, err = NewReader(onlyReaderAt{bytes.NewReader(data)}, m)
		if err != nil {
			t.Fatal(err)
		}
		viaReaderAt = readAll(t, r, m)
		if int64(len(data)) != m.FileSize() {
			return
		}
		mr, err := newReader(bytes.NewReader(data), m, data)
		if err != nil {
			t.Fatal(err)
		}
		viaMem := readAll(t, mr, m)
		if !reflect.DeepEqual(viaReaderAt, viaMem) {
			t.Fatal("ReaderAt and in-memory readers disagree")
		}
		// m's CRCs are data's: what Verify accepts may differ from what
		// was written (a neighbor changed in order), but must read back as
		// the format defines it.
		if VerifyReader(context.Background(), bytes.NewReader(data), int64(len(data)), m) == nil {
			for v := range viaMem {
				if want := refNeighbors(data, m, uint32(v)); !slices.Equal(viaMem[v], want) {
					t.Fatalf("Verify accepted the data but node %d reads %v, the format gives %v", v, viaMem[v], want)
				}
			}
		}
	})
}

// FuzzVerify corrupts a valid graph (xor mutations, truncation) and
// optionally recomputes the manifest's CRCs so that the structural checks
// alone must catch the damage. Verify must never panic, must reject any
// change under the original CRCs, and whatever it accepts must read back,
// through Reader, exactly as the format defines and with every invariant.
func FuzzVerify(f *testing.F) {
	fg := getFuzzGraph(f)
	f.Add([]byte{}, false, uint16(0))
	f.Add([]byte{0, 0, 1}, true, uint16(0))     // n_nodes of chunk 0
	f.Add([]byte{8, 0, 1}, true, uint16(0))     // off_0 of chunk 0
	f.Add([]byte{40, 0, 0x80}, true, uint16(0)) // a neighbor or offset
	f.Add([]byte{0xfc, 1, 1}, true, uint16(0))  // the fill
	f.Add([]byte{}, true, uint16(512))
	f.Fuzz(func(t *testing.T, muts []byte, fixCRC bool, cut uint16) {
		data := slices.Clone(fg.data)
		for i := 0; i+2 < len(muts); i += 3 {
			pos := (int(muts[i]) | int(muts[i+1])<<8) % len(data)
			data[pos] ^= muts[i+2]
		}
		if cut > 0 {
			data = data[:len(data)-int(cut)%len(data)]
		}
		m := cloneManifest(fg.m)
		if fixCRC {
			for i := range m.Chunks {
				off, n := m.ChunkOffset(i), m.ChunkStoredSize(i)
				if off+n <= int64(len(data)) {
					m.Chunks[i].CRC32C = crc32c.Checksum(data[off : off+n])
				}
			}
		}
		verr := VerifyReader(context.Background(), bytes.NewReader(data), int64(len(data)), m)
		r, err := NewReader(onlyReaderAt{bytes.NewReader(data)}, m)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, r, m)
		if verr != nil {
			return
		}
		if !fixCRC && !bytes.Equal(data, fg.data) {
			t.Fatal("Verify accepted changed bytes under the original CRCs")
		}
		for v := uint32(0); v < m.NumNodes; v++ {
			nb := got[v]
			if nb == nil {
				t.Fatalf("Verify accepted the graph but Neighbors(%d) failed", v)
			}
			if !slices.Equal(nb, refNeighbors(data, m, v)) {
				t.Fatalf("node %d: Reader %v, format %v", v, nb, refNeighbors(data, m, v))
			}
			for i, u := range nb {
				if u >= m.NumNodes || (i > 0 && u <= nb[i-1]) {
					t.Fatalf("Verify accepted node %d with neighbors %v", v, nb)
				}
			}
		}
	})
}

// FuzzParseManifest: any bytes; no panic; what parses is valid and
// survives a JSON round trip unchanged.
func FuzzParseManifest(f *testing.F) {
	fg := getFuzzGraph(f)
	f.Add(fg.manifest)
	f.Add([]byte(`{"version":1,"num_nodes":0,"num_edges":0,"chunk_size":512,"options":{"self_loops":"keep"},"chunks":[]}`))
	f.Add([]byte(`{"version":1,"num_nodes":1,"num_edges":0,"chunk_size":512,"options":{"self_loops":"keep"},"chunks":[{"start":0,"end":1,"n_nodes":1,"bytes_used":16,"fill_bytes":496}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest(out)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, m2)
		}
		_ = m.FileSize()
	})
}

// TestFuzzSeeds keeps the committed seed corpora under testdata/fuzz in
// step with the fixture; -update rewrites them.
func TestFuzzSeeds(t *testing.T) {
	fg := getFuzzGraph(t)
	// FuzzReader's mutations that set a word of chunk 1 to an offset far
	// outside it: (position low, high, xor) per byte.
	var bad []byte
	for i, b := range EncodeWords(nil, []uint32{1 << 30}) {
		pos := 512 + 12 + i
		bad = append(bad, byte(pos), byte(pos>>8), fg.data[pos]^b)
	}
	seeds := map[string][]string{
		"FuzzReader": {
			"[]byte(\"\")\nuint16(0)\n[]byte(\"\")",
			fmt.Sprintf("[]byte(%q)\nuint16(0)\n[]byte(\"\")", bad),
			"[]byte(\"\")\nuint16(512)\n[]byte(\"\")",
		},
		"FuzzVerify": {
			"[]byte(\"\\x04\\x00\\x01\")\nbool(true)\nuint16(0)",
			"[]byte(\"\\x0c\\x02\\xff\\x10\\x02\\x01\")\nbool(true)\nuint16(0)",
			"[]byte(\"\\x30\\x00\\x05\")\nbool(false)\nuint16(0)",
			"[]byte(\"\")\nbool(true)\nuint16(4)",
		},
		"FuzzParseManifest": {
			fmt.Sprintf("[]byte(%q)", fg.manifest),
			"[]byte(\"{\\\"version\\\":1,\\\"num_nodes\\\":2,\\\"chunk_size\\\":512,\\\"options\\\":{\\\"self_loops\\\":\\\"drop\\\"},\\\"chunks\\\":[{\\\"start\\\":0,\\\"end\\\":2,\\\"n_nodes\\\":2,\\\"bytes_used\\\":20,\\\"fill_bytes\\\":492}]}\")",
			"[]byte(\"{\\\"version\\\":1,\\\"chunk_size\\\":-512}\")",
		},
	}
	for target, list := range seeds {
		dir := filepath.Join("testdata", "fuzz", target)
		for i, s := range list {
			path := filepath.Join(dir, fmt.Sprintf("seed%d", i))
			content := "go test fuzz v1\n" + s + "\n"
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != content {
				t.Fatalf("%s is missing or stale (run go test -run TestFuzzSeeds -update): %v", path, err)
			}
		}
	}
}
