package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/internal/progress"
)

// TestBuildRefusesNumNodesOverBudget is issue 15's finding 4: --num-nodes
// 2147483647 with a 2-edge input ran the machine out of memory. It must
// fail at once, before allocating or creating anything, with the figure,
// the budget and the flag to change.
func TestBuildRefusesNumNodesOverBudget(t *testing.T) {
	in := writeFile(t, t.TempDir(), "two.txt", []byte("0 1\n1 2\n"))
	need := buildMemory(chunkfmt.MaxNodes, 0, 0, chunkfmt.DefaultChunkSize, max(1, runtime.GOMAXPROCS(0)))
	budgets := []int64{1 << 30}
	if avail := memavail.Available(); avail > 0 && avail < need {
		budgets = append(budgets, 0) // the default: this machine's available memory
	} else {
		t.Logf("available memory %d covers %d: default budget not tested", avail, need)
	}
	for _, budget := range budgets {
		dir := t.TempDir()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		_, err := Build(context.Background(), []string{in}, filepath.Join(dir, "g"), BuildOptions{NumNodes: chunkfmt.MaxNodes, Memory: budget})
		took := time.Since(t0)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrMemoryBudget) {
			t.Fatalf("budget %d: err = %v, want ErrMemoryBudget", budget, err)
		}
		budgetText := "budget of " // the default moves with the machine's free memory
		if budget != 0 {
			budgetText += progress.Bytes(budget)
		}
		for _, want := range []string{"--num-nodes 2147483647", "about " + progress.Bytes(need), "12 bytes per node", budgetText, "(--memory)", "give a smaller --num-nodes"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("budget %d: error %q lacks %q", budget, err, want)
			}
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 || took > 5*time.Second {
			t.Errorf("budget %d: refused after %v and %d bytes allocated; want at once", budget, took, grew)
		}
		assertClean(t, dir)
	}
}

// TestBuildMemoryBudget: each check that can refuse a build, at its
// boundary: a budget equal to the figure passes, one byte less fails and
// names what to change.
func TestBuildMemoryBudget(t *testing.T) {
	inDir := t.TempDir()
	w := max(1, runtime.GOMAXPROCS(0))
	const cs = 4096
	// 300 nodes in a chain: 299 entries, largest degree 1.
	var chain []byte
	for i := range 299 {
		chain = fmt.Appendf(chain, "%d %d\n", i, i+1)
	}
	chainIn := writeFile(t, inDir, "chain.txt", chain)
	far := writeFile(t, inDir, "far.txt", []byte("0 1\n5 7\n1999999999 3\n"))
	full := buildMemory(300, 299, 1, cs, w)
	for _, c := range []struct {
		name   string
		in     string
		o      BuildOptions
		want   string // "" for success
		budget int64
	}{
		{"num-nodes at budget", chainIn, BuildOptions{NumNodes: 300}, "", full},
		{"num-nodes over", chainIn, BuildOptions{NumNodes: 300}, "--num-nodes 300: over the memory budget", buildMemory(300, 0, 0, cs, w) - 1},
		{"counted over", chainIn, BuildOptions{}, "300 nodes, 299 adjacency entries, largest degree 1: over the memory budget", full - 1},
		{"largest id at budget", chainIn, BuildOptions{}, "", full},
		{"largest id over", far, BuildOptions{}, "far.txt: node id 1999999999: over the memory budget: a graph of 2000000000 nodes", 1 << 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.o.ChunkSize, c.o.Memory = cs, c.budget
			sum, err := Build(context.Background(), []string{c.in}, filepath.Join(dir, "g"), c.o)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if sum.MemoryBudget != c.budget || sum.NumNodes != 300 {
					t.Fatalf("summary %+v", sum)
				}
				if err := chunkfmt.Verify(filepath.Join(dir, "g")); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--memory") {
				t.Fatalf("err = %v\nwant ErrMemoryBudget and %q", err, c.want)
			}
			assertClean(t, dir)
		})
	}
	if _, err := Build(context.Background(), []string{chainIn}, filepath.Join(t.TempDir(), "g"), BuildOptions{Memory: -1}); err == nil || !strings.Contains(err.Error(), "--memory -1") {
		t.Fatalf("negative budget: %v", err)
	}
}

// TestBuildGrowsWithinBudget: with no --num-nodes the degree array grows
// by doubling as ids appear; the doubling must stop at what the budget
// holds, so that a graph that fits is never refused because of it.
func TestBuildGrowsWithinBudget(t *testing.T) {
	mc := memoryCheck{budget: 0, chunkSize: 4096, workers: max(1, runtime.GOMAXPROCS(0))}
	const n = 1000
	mc.budget = mc.need(n, 0, 0)
	if got := mc.maxNodes(); got != n {
		t.Fatalf("maxNodes = %d at a budget of need(%d); want %d", got, n, n)
	}
	// Ids in ascending order make the array double many times; the last
	// (999) lands just past a power of two.
	var text []byte
	for i := 1; i < n; i *= 2 {
		text = fmt.Appendf(text, "0 %d\n", i)
	}
	text = fmt.Appendf(text, "0 %d\n", n-1)
	in := writeFile(t, t.TempDir(), "g.txt", text)
	entries := uint64(strings.Count(string(text), "\n"))
	budget := buildMemory(n, entries, uint32(entries), 4096, mc.workers)
	sum, err := Build(context.Background(), []string{in}, filepath.Join(t.TempDir(), "g"), BuildOptions{ChunkSize: 4096, Memory: budget})
	if err != nil {
		t.Fatal(err)
	}
	if sum.NumNodes != n {
		t.Fatalf("%d nodes", sum.NumNodes)
	}
}

// TestChunkSizeSuggestionIsRightFirstTime is issue 15's "after
// --chunk-size 512 fails the suggested size is too small again twice in a
// row": the first node that does not fit is seldom the largest. The
// suggestion must come from the longest list after dedup and the
// self-loop rule, so that one retry with it succeeds, and be the
// smallest that does.
func TestChunkSizeSuggestionIsRightFirstTime(t *testing.T) {
	// Node 0: 200 neighbors, node 5: 300, node 9: 1000 distinct ones;
	// node 3: 3000 entries but one distinct neighbor (and a self-loop).
	var pairs []uint32
	for _, nd := range []struct{ u, deg uint32 }{{0, 200}, {5, 300}, {9, 1000}} {
		for k := range nd.deg {
			pairs = append(pairs, nd.u, 10+k)
		}
	}
	for range 3000 {
		pairs = append(pairs, 3, 4)
	}
	pairs = append(pairs, 3, 3)
	in := writeFile(t, t.TempDir(), "g.bin32", bin32(pairs))
	for _, c := range []struct {
		name string
		o    BuildOptions
		node uint32
		deg  int
	}{
		{"no dedup", BuildOptions{}, 3, 3001},
		{"dedup", BuildOptions{Dedup: true}, 9, 1000},
		{"dedup, drop self-loops", BuildOptions{Dedup: true, SelfLoops: chunkfmt.SelfLoopsDrop}, 9, 1000},
		{"drop self-loops", BuildOptions{SelfLoops: chunkfmt.SelfLoopsDrop}, 3, 3000},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o := c.o
			o.ChunkSize = 512
			_, err := Build(context.Background(), []string{in}, filepath.Join(dir, "g"), o)
			var tl *chunkfmt.NodeTooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("err = %v; want a NodeTooLargeError", err)
			}
			if tl.Node != c.node || tl.Degree != c.deg || tl.MinChunkSize != chunkfmt.MinChunkSizeFor(c.deg) {
				t.Fatalf("suggestion for node %d of degree %d (%d bytes); want node %d of degree %d", tl.Node, tl.Degree, tl.MinChunkSize, c.node, c.deg)
			}
			flag := fmt.Sprintf("rebuild with --chunk-size %d (", tl.MinChunkSize)
			if !strings.Contains(err.Error(), flag) {
				t.Fatalf("error %q lacks %q", err, flag)
			}
			assertClean(t, dir)
			// One sector less is too small; the suggestion builds.
			o.ChunkSize = tl.MinChunkSize - chunkfmt.SectorSize
			if _, err := Build(context.Background(), []string{in}, filepath.Join(dir, "g"), o); !errors.Is(err, chunkfmt.ErrNodeTooLarge) {
				t.Fatalf("chunk size %d (one sector below the suggestion): err = %v", o.ChunkSize, err)
			}
			o.ChunkSize = tl.MinChunkSize
			sum, err := Build(context.Background(), []string{in}, filepath.Join(dir, "g"), o)
			if err != nil {
				t.Fatalf("retry with the suggested --chunk-size %d: %v", o.ChunkSize, err)
			}
			if sum.MaxDegree != uint32(c.deg) {
				t.Fatalf("max degree %d, want %d", sum.MaxDegree, c.deg)
			}
			if err := chunkfmt.Verify(filepath.Join(dir, "g")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBuildRemovesStaleTempDirs: a build removes the temporary directory
// a killed earlier build of the same output left (its process is gone),
// and keeps one whose owner is alive and every unrelated name.
func TestBuildRemovesStaleTempDirs(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "g")
	in := writeFile(t, t.TempDir(), "g.txt", randomEdgeText(500))
	stale := killedBuildLeftover(t, out, stepPass2)
	live, err := atomicfile.TempDir(out) // this process's: a build still running
	if err != nil {
		t.Fatal(err)
	}
	other, err := atomicfile.TempDir(filepath.Join(parent, "h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".g.tmp-123456", "notes"} {
		if err := os.Mkdir(filepath.Join(parent, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := Build(context.Background(), []string{in}, out, BuildOptions{ChunkSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.StaleRemoved) != 1 || sum.StaleRemoved[0] != stale {
		t.Fatalf("removed %v, want [%s]", sum.StaleRemoved, stale)
	}
	assertClean(t, parent, "g", filepath.Base(live), filepath.Base(other), ".g.tmp-123456", "notes")
}
