package ingest

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parseIndependently reads an edge list with the standard library only
// (compress/gzip, bufio.Scanner, strings.FieldsFunc, strconv), into a map
// from source to destinations: a second implementation to check Build's
// scanner, spool, scatter and sort against.
func parseIndependently(t testing.TB, path string) (map[uint32][]uint32, uint32) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	adj := map[uint32][]uint32{}
	var n uint32
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		wasFirst := first
		first = false
		if line == "" || line[0] == '#' || line[0] == '%' {
			continue
		}
		f := strings.FieldsFunc(line, func(c rune) bool { return c == ' ' || c == '\t' || c == ',' })
		if len(f) != 2 {
			t.Fatalf("%s: line %q", path, line)
		}
		u, err1 := strconv.ParseUint(f[0], 10, 32)
		v, err2 := strconv.ParseUint(f[1], 10, 32)
		if err1 != nil || err2 != nil {
			if wasFirst {
				continue // header
			}
			t.Fatalf("%s: line %q", path, line)
		}
		adj[uint32(u)] = append(adj[uint32(u)], uint32(v))
		n = max(n, uint32(u)+1, uint32(v)+1)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return adj, n
}

// checkRealGraph chunkifies path with small chunks and compares every
// node's adjacency read back through chunkfmt with the independent parse.
func checkRealGraph(t *testing.T, path string) {
	want, n := parseIndependently(t, path)
	out := filepath.Join(t.TempDir(), "g")
	sum, err := Build(context.Background(), []string{path}, out, BuildOptions{ChunkSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if sum.NumNodes != n {
		t.Fatalf("num nodes %d, want %d", sum.NumNodes, n)
	}
	got := readGraph(t, out)
	var edges uint64
	for u := range n {
		w := slices.Clone(want[u])
		slices.Sort(w)
		edges += uint64(len(w))
		if !equalU32(got[u], w) {
			t.Fatalf("node %d: got %v, want %v", u, got[u], w)
		}
	}
	if sum.NumEdges != edges || sum.InputEdges != edges {
		t.Fatalf("summary says %d stored / %d read edges, want %d", sum.NumEdges, sum.InputEdges, edges)
	}
	// The out-of-core build, its edges cut into about five partitions
	// spilled to files, writes the same bytes.
	ext := filepath.Join(t.TempDir(), "g")
	var esum *Summary
	withPartitionEntries(sum.NumEdges/5+1, func() {
		esum, err = Build(context.Background(), []string{path}, ext, BuildOptions{ChunkSize: 64 << 10})
	})
	if err != nil {
		t.Fatal(err)
	}
	if esum.Partitions < 2 {
		t.Fatalf("%d partitions, want several", esum.Partitions)
	}
	sameBytes(t, fmt.Sprintf("%d partitions", esum.Partitions), graphFileBytes(t, ext), graphFileBytes(t, out))
	t.Logf("%s: %d nodes, %d edges, %d chunks; %d partitions identical", filepath.Base(path), sum.NumNodes, sum.NumEdges, sum.NumChunks, esum.Partitions)
}

func TestBundledGraphs(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/*.txt*")
	if len(paths) < 2 {
		t.Fatalf("bundled graphs missing: %v", paths)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) { checkRealGraph(t, p) })
	}
}

// TestSharedDatasets does the same for every edge list under
// ../shared/datasets (or $INGEST_DATASETS). It is long, so it runs only
// without -short and when the directory exists.
func TestSharedDatasets(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	root := os.Getenv("INGEST_DATASETS")
	if root == "" {
		root = "../../shared/datasets"
	}
	if _, err := os.Stat(root); err != nil {
		t.Skip("no datasets:", err)
	}
	var paths []string
	for _, pat := range []string{"*/*.txt", "*/*.txt.gz", "musae-facebook/facebook_edges.csv"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		for _, p := range m {
			if !strings.Contains(filepath.Base(p), "labels") {
				paths = append(paths, p)
			}
		}
	}
	if len(paths) < 6 {
		t.Fatalf("found only %v under %s", paths, root)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) { checkRealGraph(t, p) })
	}
}
