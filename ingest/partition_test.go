package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// graphFileBytes returns the three files of a graph directory.
func graphFileBytes(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, name := range []string{chunkfmt.ChunksFile, chunkfmt.IndexFile, chunkfmt.ManifestFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		m[name] = b
	}
	return m
}

func sameBytes(t testing.TB, what string, got, want map[string][]byte) {
	t.Helper()
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Fatalf("%s: %s differs (%d bytes, want %d)", what, name, len(got[name]), len(w))
		}
	}
}

// referenceGraph writes adj with chunkfmt.Writer directly: the bytes any
// build of the same adjacency, options and chunk size must produce.
func referenceGraph(t testing.TB, adj [][]uint32, o BuildOptions) map[string][]byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ref")
	loops := o.SelfLoops
	if loops == "" {
		loops = chunkfmt.SelfLoopsKeep
	}
	w, err := chunkfmt.NewWriter(dir, uint32(len(adj)), o.ChunkSize, chunkfmt.Options{Symmetrize: o.Symmetrize, Reverse: o.Reverse, Dedup: o.Dedup, SelfLoops: loops})
	if err != nil {
		t.Fatal(err)
	}
	w.CreatedBy = o.CreatedBy
	for _, a := range adj {
		if err := w.Append(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return graphFileBytes(t, dir)
}

// withPartitionEntries runs f with partitions capped at cap entries.
func withPartitionEntries(cap uint64, f func()) {
	testPartitionEntries = cap
	defer func() { testPartitionEntries = 0 }()
	f()
}

// TestExternalBuildBytes: on random graphs (self-loops, duplicates,
// skewed and isolated nodes), for every option combination, a build cut
// into many partitions (spill files) writes exactly the bytes of a build
// in one partition, and both exactly the bytes chunkfmt.Writer writes for
// the reference adjacency (naiveBuild): the output does not depend on how
// the edges were partitioned.
func TestExternalBuildBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	trials := 2
	if testing.Short() {
		trials = 1
	}
	for trial := range trials {
		n := uint32(1 + rng.IntN(400))
		m := rng.IntN(4000)
		pairs := randomPairs(rng, n, m, true)
		in := t.TempDir()
		cut := 2 * rng.IntN(len(pairs)/2+1)
		f1 := writeFile(t, in, "a.txt", edgeText(pairs[:cut]))
		f2 := writeFile(t, in, "b.bin32", bin32(pairs[cut:]))
		for _, sym := range []bool{false, true} {
			for _, rev := range []bool{false, true} {
				for _, dedup := range []bool{false, true} {
					for _, loops := range []string{"keep", "drop"} {
						o := BuildOptions{Symmetrize: sym, Reverse: rev, Dedup: dedup, SelfLoops: loops, NumNodes: n, CreatedBy: "test"}
						t.Run(fmt.Sprintf("t%d/sym=%v,rev=%v,dedup=%v,loops=%s", trial, sym, rev, dedup, loops), func(t *testing.T) {
							adj := naiveBuild(pairs, n, o)
							o.ChunkSize = chunkfmt.MinChunkSizeFor(maxDegree(adj)) + int64(rng.IntN(3))*512
							want := referenceGraph(t, adj, o)
							one := filepath.Join(t.TempDir(), "g")
							sum, err := Build(context.Background(), []string{f1, f2}, one, o)
							if err != nil {
								t.Fatal(err)
							}
							if sum.Partitions != 1 || sum.SpilledBytes != 0 {
								t.Fatalf("default build: %d partitions, %d bytes spilled; want 1, 0", sum.Partitions, sum.SpilledBytes)
							}
							sameBytes(t, "one partition", graphFileBytes(t, one), want)
							for _, cap := range []uint64{1, 1 + uint64(rng.IntN(500))} {
								ext := filepath.Join(t.TempDir(), "g")
								var esum *Summary
								withPartitionEntries(cap, func() {
									esum, err = Build(context.Background(), []string{f1, f2}, ext, o)
								})
								if err != nil {
									t.Fatal(err)
								}
								sameBytes(t, fmt.Sprintf("partitions of %d entries", cap), graphFileBytes(t, ext), want)
								if esum.NumEdges != sum.NumEdges || esum.DuplicatesDropped != sum.DuplicatesDropped || esum.SelfLoopsDropped != sum.SelfLoopsDropped || esum.InputEdges != sum.InputEdges || esum.MaxDegree != sum.MaxDegree {
									t.Fatalf("summary %+v, one partition %+v", esum, sum)
								}
								raw := uint64(len(pairs) / 2)
								if sym {
									raw *= 2
								}
								if raw > cap && esum.Partitions < 2 {
									t.Fatalf("%d entries in partitions of %d: %d partitions", raw, cap, esum.Partitions)
								}
								assertClean(t, filepath.Dir(ext), "g")
							}
						})
					}
				}
			}
		}
	}
}

// TestPlanPartitions: partitions cover the nodes in order without gaps,
// each holds at most the cap (a single longer node alone), and the plan
// for a budget fits it.
func TestPlanPartitions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 1 + rng.IntN(5000)
		pos := make([]uint64, n+1)
		var maxDeg uint64
		for i := range n {
			d := uint64(rng.IntN(50))
			if rng.IntN(100) == 0 {
				d = uint64(rng.IntN(5 << 20)) // a hub
			}
			maxDeg = max(maxDeg, d)
			pos[i+1] = pos[i] + d
		}
		entries := pos[n]
		cap := 1 + uint64(rng.IntN(int(entries)+1))
		parts := cutPartitions(pos, cap)
		checkCover(t, parts, uint32(n))
		for _, p := range parts {
			if e := pos[p.hi] - pos[p.lo]; e > cap && p.hi-p.lo != 1 {
				t.Fatalf("trial %d: partition %v holds %d entries, cap %d", trial, p, e, cap)
			}
		}
		floor := partitionFloor(entries, uint32(maxDeg))
		for _, avail := range []int64{floor, floor + int64(rng.IntN(64<<20)), 4*int64(entries) + 1} {
			parts, w := planPartitions(pos, uint32(maxDeg), avail)
			checkCover(t, parts, uint32(n))
			used := 4 * int64(maxEntries(pos, parts))
			if len(parts) > 1 {
				used += int64(len(parts)-1) * int64(w)
			}
			if used > avail || len(parts) > maxPartitions {
				t.Fatalf("trial %d: avail %d (floor %d): %d partitions, buffers of %d, using %d", trial, avail, floor, len(parts), w, used)
			}
			if 4*int64(entries) <= avail && len(parts) != 1 {
				t.Fatalf("trial %d: everything fits %d but %d partitions", trial, avail, len(parts))
			}
		}
	}
}

func checkCover(t *testing.T, parts []partition, n uint32) {
	t.Helper()
	next := uint32(0)
	for _, p := range parts {
		if p.lo != next || p.hi <= p.lo {
			t.Fatalf("partitions %v do not cover [0, %d) in order", parts, n)
		}
		next = p.hi
	}
	if next != n {
		t.Fatalf("partitions %v end at %d, want %d", parts, next, n)
	}
}

// TestRouter: the block table and the step past boundaries send every
// node to the partition that holds it.
func TestRouter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 30 {
		n := uint32(1 + rng.IntN(3000))
		var parts []partition
		for lo := uint32(0); lo < n; {
			hi := min(n, lo+1+uint32(rng.IntN(200)))
			if rng.IntN(3) == 0 {
				hi = lo + 1 // many boundaries inside one block
			}
			parts = append(parts, partition{lo, hi})
			lo = hi
		}
		spills := make([]*spillFile, len(parts))
		for k := range spills {
			spills[k] = &spillFile{buf: make([]byte, 1<<20)}
		}
		r := newRouter(parts, spills)
		for u := uint32(0); u < n; u++ {
			local, err := r.route([]uint32{u, u + 1}, false, false)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for parts[want].hi <= u {
				want++
			}
			if want == 0 {
				if len(local) != 2 || local[0] != u {
					t.Fatalf("node %d: local %v", u, local)
				}
				continue
			}
			s := spills[want]
			if len(local) != 0 || s.n < 8 || s.buf[s.n-8] != byte(u) || s.buf[s.n-7] != byte(u>>8) {
				t.Fatalf("node %d: not in partition %d's spill", u, want)
			}
		}
	}
}

// TestBuildExternalUnderBudget builds a graph whose edges do not fit the
// --memory budget: the build cuts partitions so that they do, spills all
// but the first, and writes the same bytes as an unconstrained build.
func TestBuildExternalUnderBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 3 M entries twice")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const n, m = 200000, 1500000
	pairs := make([]uint32, 0, 2*m)
	for range m {
		u := uint32(rng.IntN(n) * rng.IntN(n) / n)
		pairs = append(pairs, u, uint32(rng.IntN(n)))
	}
	in := writeFile(t, t.TempDir(), "g.bin32", bin32(pairs))
	o := BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: "drop", ChunkSize: 1 << 20}
	one := filepath.Join(t.TempDir(), "g")
	sum, err := Build(context.Background(), []string{in}, one, o)
	if err != nil {
		t.Fatal(err)
	}
	entries := uint64(2 * m)
	w := max(1, runtime.GOMAXPROCS(0))
	var maxDeg uint32
	for _, a := range naiveBuild(pairs, n, BuildOptions{Symmetrize: true}) {
		maxDeg = max(maxDeg, uint32(len(a)))
	}
	// Room for about a third of the entries.
	o.Memory = buildMemory(n, entries, maxDeg, o.ChunkSize, w) + 4*int64(entries)/3
	ext := filepath.Join(t.TempDir(), "g")
	esum, err := Build(context.Background(), []string{in}, ext, o)
	if err != nil {
		t.Fatal(err)
	}
	if esum.Partitions < 2 || esum.SpilledBytes == 0 {
		t.Fatalf("budget %d for %d entries: %d partitions, %d bytes spilled; want an external build", o.Memory, entries, esum.Partitions, esum.SpilledBytes)
	}
	if esum.SpilledBytes >= int64(8*entries) {
		t.Fatalf("spilled %d bytes: the first partition should stay in memory", esum.SpilledBytes)
	}
	t.Logf("%d partitions, %d bytes spilled, %d entries stored", esum.Partitions, esum.SpilledBytes, esum.NumEdges)
	sameBytes(t, "under budget", graphFileBytes(t, ext), graphFileBytes(t, one))
	if esum.NumEdges != sum.NumEdges {
		t.Fatalf("%d entries, want %d", esum.NumEdges, sum.NumEdges)
	}
}

// TestExternalBuildCancelled cancels an external build at each step,
// pass 3's loading of spill files included: the build returns the
// cancellation and leaves nothing behind.
func TestExternalBuildCancelled(t *testing.T) {
	in := writeFile(t, t.TempDir(), "a.txt", randomEdgeText(20000))
	for _, step := range []string{stepPass2, stepPass3, stepChunk, stepLoad} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		hit := false
		restore := failpoint.Enable(func(s string) error {
			if s == step {
				hit = true
				cancel()
			}
			return nil
		})
		var err error
		withPartitionEntries(1000, func() {
			_, err = Build(ctx, []string{in}, filepath.Join(dir, "g"), BuildOptions{ChunkSize: 4096})
		})
		restore()
		cancel()
		if !hit || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at %s (reached: %v): err = %v", step, hit, err)
		}
		assertClean(t, dir)
	}
}

// BenchmarkRoute routes symmetrized R-MAT-like edges into 8 partitions,
// the first in memory: pass 2's work per entry on the producer.
func BenchmarkRoute(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 1 << 20
	p := make([]uint32, 2*buildBatch)
	for k := range p {
		p[k] = uint32(rng.IntN(n) * rng.IntN(n) / n)
	}
	var parts []partition
	for lo := uint32(0); lo < n; lo += n / 8 {
		parts = append(parts, partition{lo, lo + n/8})
	}
	dir := b.TempDir()
	spills := make([]*spillFile, len(parts))
	for k := 1; k < len(parts); k++ {
		s, err := createSpill(dir, k, spillBufMax)
		if err != nil {
			b.Fatal(err)
		}
		defer s.remove()
		spills[k] = s
	}
	r := newRouter(parts, spills)
	b.SetBytes(int64(len(p)) * 4)
	for b.Loop() {
		if _, err := r.route(p, true, false); err != nil {
			b.Fatal(err)
		}
		for _, s := range spills[1:] {
			// Keep the files small: only the routing is measured.
			s.n = 0
		}
	}
}

// TestEdgeMemory: a checked budget gives the edges what the rest of the
// build leaves, never less than the floor; an unchecked one (the
// machine's memory unknown) a fixed 1 GiB, so that a large graph is still
// partitioned rather than held whole in memory.
func TestEdgeMemory(t *testing.T) {
	w := max(1, runtime.GOMAXPROCS(0))
	const n, entries, maxDeg = 1000, 1 << 32, 5000
	floor := partitionFloor(entries, maxDeg)
	unchecked := memoryCheck{chunkSize: 1 << 20, workers: w}
	if got := unchecked.edgeMemory(n, entries, maxDeg); got != uncheckedEdgeMemory {
		t.Fatalf("unchecked: %d, want %d", got, uncheckedEdgeMemory)
	}
	need := buildMemory(n, entries, maxDeg, 1<<20, w)
	for _, extra := range []int64{0, 1, 1 << 30} {
		c := memoryCheck{budget: need + extra, chunkSize: 1 << 20, workers: w}
		if got := c.edgeMemory(n, entries, maxDeg); got != floor+extra {
			t.Fatalf("budget need+%d: %d for edges, want floor %d + %d", extra, got, floor, extra)
		}
	}
	parts, _ := planPartitions(func() []uint64 {
		pos := make([]uint64, n+1)
		for i := range n {
			pos[i+1] = pos[i] + entries/n
		}
		return pos
	}(), maxDeg, uncheckedEdgeMemory)
	if len(parts) < 16 {
		t.Fatalf("%d entries unchecked: %d partitions, want at least 16 of at most 1 GiB", uint64(entries), len(parts))
	}
}
