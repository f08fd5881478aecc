package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// TestCorruptGraphFails is issue 15's finding 2 and the graph half of
// finding 6 through the command line: a flipped bit in an adjacency or an
// offset, a neighbor id turned into 0xFFFFFFCC and a changed start in
// chunks.info each make prepare and run exit 1 with a message naming the
// file and chunk, leaving no epoch, where they used to exit 0 with other
// samples (or write an epoch that sample refused later).
func TestCorruptGraphFails(t *testing.T) {
	clean, _ := testGraph(t, 4000, 6, 8192)
	m, err := chunkfmt.ReadManifest(clean)
	if err != nil {
		t.Fatal(err)
	}
	const c = 2
	ci := m.Chunks[c]
	adj := m.ChunkOffset(c) + 4*(int64(3+ci.NNodes)+int64(ci.NEdges)/2)
	off := m.ChunkOffset(c) + 4*(2+3)
	var all []uint32
	for v := uint32(0); v < m.NumNodes; v++ {
		all = append(all, v)
	}
	train := writeTrain(t, all)
	for _, tc := range []struct {
		name string
		file string
		pos  int64
		edit func(uint32) uint32
		msg  string
	}{
		{"adjacency-bit", chunkfmt.ChunksFile, adj, func(v uint32) uint32 { return v ^ 8 }, "edges.chunks: chunk 2 "},
		{"offset-bit", chunkfmt.ChunksFile, off, func(v uint32) uint32 { return v ^ 1 }, "edges.chunks: chunk 2 "},
		{"id-0xFFFFFFCC", chunkfmt.ChunksFile, adj, func(uint32) uint32 { return 0xFFFFFFCC }, "edges.chunks: chunk 2 "},
		{"chunks.info-start", chunkfmt.IndexFile, 4 * c, func(v uint32) uint32 { return v + 3 }, "chunks.info: chunk 2 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "graph")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{chunkfmt.ChunksFile, chunkfmt.IndexFile, chunkfmt.ManifestFile} {
				b, err := os.ReadFile(filepath.Join(clean, name))
				if err != nil {
					t.Fatal(err)
				}
				if name == tc.file {
					binary.LittleEndian.PutUint32(b[tc.pos:], tc.edit(binary.LittleEndian.Uint32(b[tc.pos:])))
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			state := filepath.Join(t.TempDir(), "s")
			_, e, code := cli(t, "prepare", "-q", "--state", state, "--graph", dir, "--train", train, "--fanouts", "5,3")
			if code != 1 || !strings.Contains(e, tc.msg) {
				t.Fatalf("prepare: exit %d, stderr %q; want 1 naming %q", code, e, tc.msg)
			}
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Fatalf("prepare failed but left %d entries in the state directory", len(ents))
			}
			for _, extra := range [][]string{nil, {"--verify-reads"}} {
				args := append([]string{"run", "--graph", dir, "--train", train, "--fanouts", "5,3", "--epochs", "1"}, extra...)
				if _, e, code := cli(t, args...); code != 1 || !strings.Contains(e, tc.msg) {
					t.Fatalf("run %v: exit %d, stderr %q; want 1 naming %q", extra, code, e, tc.msg)
				}
			}
			t.Log(strings.TrimSpace(e))
		})
	}
}
