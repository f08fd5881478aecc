package host

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
)

// corruption is one edit of a graph directory of the corruption matrix.
type corruption struct {
	name string
	edit func(t *testing.T, dir string, m *chunkfmt.Manifest)
	// want is the sentinel every checked path's error must match; nil
	// with harmless set means the edit is in bytes no reader uses, and
	// every path must then return exactly the clean graph's result.
	want     error
	harmless bool
}

// Chunks of corruptGraphCSR at 16 KiB (asserted by TestCorruptionMatrix):
// chunk 3 holds 12136 bytes, so its fill runs past the last page any
// reader reads; the last chunk (8) is padded to a sector.
const (
	corruptChunkSize = 16384
	midChunk         = 1
	sparseChunk      = 3
)

func chunkPos(m *chunkfmt.Manifest, c int, word int64) int64 { return m.ChunkOffset(c) + 4*word }

func readWordAt(t *testing.T, path string, pos int64) uint32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint32(b[:])
}

func writeWordAt(t *testing.T, path string, pos int64, v uint32) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
}

// editWord replaces word `word` of chunk c of edges.chunks with f(old).
func editWord(c int, word func(t *testing.T, m *chunkfmt.Manifest, path string) int64, f func(uint32) uint32) func(*testing.T, string, *chunkfmt.Manifest) {
	return func(t *testing.T, dir string, m *chunkfmt.Manifest) {
		p := filepath.Join(dir, chunkfmt.ChunksFile)
		pos := chunkPos(m, c, word(t, m, p))
		writeWordAt(t, p, pos, f(readWordAt(t, p, pos)))
	}
}

func at(w int64) func(*testing.T, *chunkfmt.Manifest, string) int64 {
	return func(*testing.T, *chunkfmt.Manifest, string) int64 { return w }
}

// midAdjacency is a word in the middle of chunk c's neighbors.
func midAdjacency(c int) func(*testing.T, *chunkfmt.Manifest, string) int64 {
	return func(_ *testing.T, m *chunkfmt.Manifest, _ string) int64 {
		ci := m.Chunks[c]
		return int64(3+ci.NNodes) + int64(ci.NEdges)/2
	}
}

// lastNeighborOfFirstList is the last neighbor of the first node of chunk
// c that has one (so a larger id keeps the list sorted).
func lastNeighborOfFirstList(c int) func(*testing.T, *chunkfmt.Manifest, string) int64 {
	return func(t *testing.T, m *chunkfmt.Manifest, p string) int64 {
		base := chunkPos(m, c, 0)
		for j := int64(0); j < int64(m.Chunks[c].NNodes); j++ {
			lo, hi := readWordAt(t, p, base+4*(2+j)), readWordAt(t, p, base+4*(3+j))
			if hi > lo {
				return int64(hi) - 1
			}
		}
		panic("chunk without neighbors")
	}
}

// editManifest rewrites manifest.json after f edits its decoded JSON.
func editManifest(f func(m map[string]any)) func(*testing.T, string, *chunkfmt.Manifest) {
	return func(t *testing.T, dir string, _ *chunkfmt.Manifest) {
		p := filepath.Join(dir, chunkfmt.ManifestFile)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func manifestChunk(m map[string]any, c int) map[string]any {
	return m["chunks"].([]any)[c].(map[string]any)
}

// shiftBoundary moves the first node of chunk 1 into chunk 0 in a decoded
// manifest, keeping it valid (counts, bytes used, fill).
func shiftBoundary(m map[string]any) {
	c0, c1 := manifestChunk(m, 0), manifestChunk(m, 1)
	c0["end"] = c0["end"].(float64) + 1
	c0["n_nodes"] = c0["n_nodes"].(float64) + 1
	c0["bytes_used"] = c0["bytes_used"].(float64) + 4
	c0["fill_bytes"] = c0["fill_bytes"].(float64) - 4
	c1["start"] = c1["start"].(float64) + 1
	c1["n_nodes"] = c1["n_nodes"].(float64) - 1
	c1["bytes_used"] = c1["bytes_used"].(float64) - 4
	c1["fill_bytes"] = c1["fill_bytes"].(float64) + 4
}

func corruptions() []corruption {
	flip := func(bit uint) func(uint32) uint32 { return func(v uint32) uint32 { return v ^ 1<<bit } }
	set := func(x uint32) func(uint32) uint32 { return func(uint32) uint32 { return x } }
	plus := func(d uint32) func(uint32) uint32 { return func(v uint32) uint32 { return v + d } }
	fillWord := func(c int) func(*testing.T, *chunkfmt.Manifest, string) int64 {
		return func(_ *testing.T, m *chunkfmt.Manifest, _ string) int64 { return m.Chunks[c].BytesUsed / 4 }
	}
	lastWord := func(c int) func(*testing.T, *chunkfmt.Manifest, string) int64 {
		return func(_ *testing.T, m *chunkfmt.Manifest, _ string) int64 { return m.ChunkStoredSize(c)/4 - 1 }
	}
	return []corruption{
		// Chunk header words.
		{name: "header n_nodes", edit: editWord(midChunk, at(0), plus(1)), want: chunkfmt.ErrCorrupt},
		{name: "header start_node", edit: editWord(midChunk, at(1), plus(1)), want: chunkfmt.ErrCorrupt},
		{name: "header off_0 flipped bit", edit: editWord(midChunk, at(2), flip(0)), want: chunkfmt.ErrChecksum},
		// Offsets.
		{name: "offset flipped bit", edit: editWord(midChunk, at(2+5), flip(1)), want: chunkfmt.ErrChecksum},
		{name: "offset flipped high bit", edit: editWord(midChunk, at(2+5), flip(20)), want: chunkfmt.ErrChecksum},
		{name: "last offset of the last chunk", edit: editWord(8, at(2+200), plus(1)), want: chunkfmt.ErrChecksum},
		// Adjacency.
		{name: "adjacency flipped bit", edit: editWord(midChunk, midAdjacency(midChunk), flip(3)), want: chunkfmt.ErrChecksum},
		{name: "adjacency flipped bit in the hub's chunk", edit: editWord(4, midAdjacency(4), flip(0)), want: chunkfmt.ErrChecksum},
		{name: "neighbor id 0xFFFFFFCC", edit: editWord(midChunk, midAdjacency(midChunk), set(0xFFFFFFCC)), want: chunkfmt.ErrChecksum},
		{name: "neighbor id num_nodes+5, still sorted", edit: editWord(midChunk, lastNeighborOfFirstList(midChunk), set(3005)), want: chunkfmt.ErrChecksum},
		// Fill and padding.
		{name: "fill in the read range", edit: editWord(sparseChunk, fillWord(sparseChunk), set(7)), want: chunkfmt.ErrChecksum},
		{name: "padding of the last chunk", edit: editWord(8, fillWord(8), set(1)), want: chunkfmt.ErrChecksum},
		{name: "fill beyond every read", edit: editWord(sparseChunk, lastWord(sparseChunk), set(0xdead)), harmless: true},
		// chunks.info.
		{name: "chunks.info start changed", edit: func(t *testing.T, dir string, _ *chunkfmt.Manifest) {
			p := filepath.Join(dir, chunkfmt.IndexFile)
			writeWordAt(t, p, 4*midChunk, readWordAt(t, p, 4*midChunk)+3)
		}, want: chunkfmt.ErrCorrupt},
		{name: "chunks.info truncated", edit: func(t *testing.T, dir string, _ *chunkfmt.Manifest) {
			if err := os.Truncate(filepath.Join(dir, chunkfmt.IndexFile), 4*3); err != nil {
				t.Fatal(err)
			}
		}, want: chunkfmt.ErrCorrupt},
		// manifest.json.
		{name: "manifest crc32c changed", edit: editManifest(func(m map[string]any) {
			c := manifestChunk(m, midChunk)
			c["crc32c"] = c["crc32c"].(float64) + 1
		}), want: chunkfmt.ErrChecksum},
		{name: "manifest start changed", edit: editManifest(func(m map[string]any) {
			manifestChunk(m, midChunk)["start"] = manifestChunk(m, midChunk)["start"].(float64) + 1
		}), want: chunkfmt.ErrBadManifest},
		{name: "manifest node range shifted consistently", edit: editManifest(func(m map[string]any) {
			// A valid manifest whose chunk 0 and 1 disagree with the
			// headers and chunks.info.
			shiftBoundary(m)
		}), want: chunkfmt.ErrCorrupt},
		{name: "manifest and chunks.info shifted together", edit: func(t *testing.T, dir string, m *chunkfmt.Manifest) {
			// Both agree with each other; only the headers tell.
			editManifest(func(mm map[string]any) { shiftBoundary(mm) })(t, dir, m)
			p := filepath.Join(dir, chunkfmt.IndexFile)
			writeWordAt(t, p, 4, readWordAt(t, p, 4)+1)
		}, want: chunkfmt.ErrCorrupt},
		{name: "manifest num_nodes", edit: editManifest(func(m map[string]any) { m["num_nodes"] = m["num_nodes"].(float64) + 1 }), want: chunkfmt.ErrBadManifest},
		{name: "manifest truncated", edit: func(t *testing.T, dir string, _ *chunkfmt.Manifest) {
			if err := os.Truncate(filepath.Join(dir, chunkfmt.ManifestFile), 40); err != nil {
				t.Fatal(err)
			}
		}, want: chunkfmt.ErrBadManifest},
		{name: "manifest removed", edit: func(t *testing.T, dir string, _ *chunkfmt.Manifest) {
			if err := os.Remove(filepath.Join(dir, chunkfmt.ManifestFile)); err != nil {
				t.Fatal(err)
			}
		}, want: chunkfmt.ErrNoManifest},
	}
}

// copyGraph copies a graph directory into a new temporary one.
func copyGraph(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "graph")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{chunkfmt.ChunksFile, chunkfmt.IndexFile, chunkfmt.ManifestFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// samplingPaths are the ways the host samples from a graph directory; each
// returns the epoch (or an error) for seeds covering every node, so every
// chunk is read.
func samplingPaths() map[string]func(dir string, seeds []uint32, fan []int, key epoch.Key) (*epoch.Result, error) {
	streamed := func(opts Options) func(string, []uint32, []int, epoch.Key) (*epoch.Result, error) {
		return func(dir string, seeds []uint32, fan []int, key epoch.Key) (*epoch.Result, error) {
			s, err := Open(dir, opts)
			if err != nil {
				return nil, err
			}
			defer s.Close()
			return s.SampleEpoch(context.Background(), seeds, fan, key)
		}
	}
	return map[string]func(string, []uint32, []int, epoch.Key) (*epoch.Result, error){
		"emu":              streamed(Options{Devices: 2}),
		"emu-buffered":     streamed(Options{Buffered: true}),
		"emu-verify-reads": streamed(Options{Devices: 2, VerifyReads: true}),
		"LoadCSR": func(dir string, seeds []uint32, fan []int, key epoch.Key) (*epoch.Result, error) {
			c, err := LoadCSR(dir)
			if err != nil {
				return nil, err
			}
			return Reference(c, seeds, fan, key)
		},
		"GraphAdjacency": func(dir string, seeds []uint32, fan []int, key epoch.Key) (*epoch.Result, error) {
			g, err := chunkfmt.Open(dir)
			if err != nil {
				return nil, err
			}
			defer g.Close()
			return Reference(GraphAdjacency(g), seeds, fan, key)
		},
	}
}

// TestCorruptionMatrix corrupts every byte class of a real multi-chunk
// graph (chunk header words, offsets, adjacency, fill and padding,
// chunks.info, manifest.json) and samples an epoch that reads every chunk
// through every host path: each corruption is an error matching its
// sentinel, never an epoch with other samples. The one edit in bytes that
// no read touches gives exactly the clean epoch.
func TestCorruptionMatrix(t *testing.T) {
	clean := writeGraph(t, corruptGraphCSR(), corruptChunkSize)
	m, err := chunkfmt.ReadManifest(clean)
	if err != nil {
		t.Fatal(err)
	}
	// The layout the cases rely on.
	if len(m.Chunks) != 9 || roundUpTo(m.Chunks[sparseChunk].BytesUsed, ioAlign) >= m.ChunkStoredSize(sparseChunk) ||
		m.Chunks[8].FillBytes == 0 || m.Chunks[sparseChunk].BytesUsed%chunkfmt.SectorSize == 0 || m.Chunks[8].NNodes < 200 {
		t.Fatalf("graph layout changed: %+v", m.Chunks)
	}
	seeds := make([]uint32, m.NumNodes)
	for i := range seeds {
		seeds[i] = uint32(i)
	}
	fan := []int{5, 3}
	key := epoch.Key{Seed: 11, Epoch: 2}
	paths := samplingPaths()
	want := map[string]*epoch.Result{}
	for name, run := range paths {
		r, err := run(clean, seeds, fan, key)
		if err != nil {
			t.Fatalf("%s on the clean graph: %v", name, err)
		}
		want[name] = r
	}
	for _, tc := range corruptions() {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := copyGraph(t, clean)
			tc.edit(t, dir, m)
			for name, run := range paths {
				got, err := run(dir, seeds, fan, key)
				switch {
				case tc.harmless && err != nil:
					t.Errorf("%s: %v, want the clean epoch", name, err)
				case tc.harmless && !reflect.DeepEqual(got, want[name]):
					t.Errorf("%s: the epoch differs from the clean graph's", name)
				case !tc.harmless && err == nil:
					t.Errorf("%s: no error (epoch equal to the clean one: %v)", name, reflect.DeepEqual(got, want[name]))
				case !tc.harmless && !errors.Is(err, tc.want):
					t.Errorf("%s: %v, want errors.Is %v", name, err, tc.want)
				}
				if err != nil && testing.Verbose() {
					t.Logf("%s: %v", name, err)
				}
			}
		})
	}
}

// TestUncheckedReadsStillRefuseBadIDs plays the XRT path without
// --verify-reads, where chunk bytes are not CRC-checked on the host: a
// neighbor id that is not a node (finding 2's 0xFFFFFFCC, or an id just
// beyond num_nodes) is refused by the sampler's check of every sample,
// naming the layer, chunk and node, instead of dropping the edge or
// failing later as "chunk index split"; a changed start in chunks.info is
// refused at Open.
func TestUncheckedReadsStillRefuseBadIDs(t *testing.T) {
	clean := writeGraph(t, corruptGraphCSR(), corruptChunkSize)
	m, err := chunkfmt.ReadManifest(clean)
	if err != nil {
		t.Fatal(err)
	}
	seeds := make([]uint32, m.NumNodes)
	for i := range seeds {
		seeds[i] = uint32(i)
	}
	for _, tc := range []struct {
		name string
		id   uint32
		word func(*testing.T, *chunkfmt.Manifest, string) int64
	}{
		{"0xFFFFFFCC", 0xFFFFFFCC, midAdjacency(midChunk)},
		{"num_nodes+5", 3005, lastNeighborOfFirstList(midChunk)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyGraph(t, clean)
			p := filepath.Join(dir, chunkfmt.ChunksFile)
			pos := chunkPos(m, midChunk, tc.word(t, m, p))
			writeWordAt(t, p, pos, tc.id)
			s := openSampler(t, dir, Options{skipChecksum: true})
			// Fanout 64 takes every neighbor of the (non-hub) node.
			_, err := s.SampleEpoch(context.Background(), seeds, []int{64, 2}, epoch.Key{Seed: 3})
			if !errors.Is(err, ErrBadSample) {
				t.Fatalf("err = %v, want ErrBadSample", err)
			}
			for _, want := range []string{"layer 0 (hop 1)", "chunk 1,", "node ", fmt.Sprintf("%#08x", tc.id), "num_nodes 3000"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			t.Log(err)
		})
	}
	dir := copyGraph(t, clean)
	p := filepath.Join(dir, chunkfmt.IndexFile)
	writeWordAt(t, p, 4*midChunk, readWordAt(t, p, 4*midChunk)+3)
	_, err = Open(dir, Options{skipChecksum: true})
	if !errors.Is(err, chunkfmt.ErrCorrupt) || !strings.Contains(err.Error(), "start 415 at word 1, manifest says 412") {
		t.Fatalf("Open with a changed chunks.info start: %v", err)
	}
}
