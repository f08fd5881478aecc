package hls

import (
	"errors"
	"slices"
	"testing"
)

// directAll is the expected concatenation of every target's whole row
// (DESIGN §3 "Full neighborhoods": nb in CSR order) and its chunk-local
// edge indices, from the adjacency lists rather than the chunk.
func directAll(start uint32, adj [][]uint32, targets []uint32) (out, edges []int32) {
	first := make([]int32, len(adj)+1)
	for i, a := range adj {
		first[i+1] = first[i] + int32(len(a))
	}
	for _, t := range targets {
		for p, v := range adj[t-start] {
			out = append(out, int32(v))
			edges = append(edges, first[t-start]+int32(p))
		}
	}
	return out, edges
}

// allLaunches takes targets through copy-all launches of the given
// capacity with run, as the host does (each from where the last stopped),
// and returns what they wrote together, the counts per target summed, and
// how many launches it took. Every launch must make progress.
func allLaunches(t *testing.T, run func(targets []uint32, skip uint32, counts, out, edges []int32) (AllProgress, error),
	targets []uint32, capacity int) (out, edges []int32, counts []int64, launches int) {
	t.Helper()
	counts = make([]int64, len(targets))
	buf, ebuf := make([]int32, capacity), make([]int32, capacity)
	r, skip := 0, uint32(0)
	for r < len(targets) {
		c := make([]int32, len(targets)-r)
		p, err := run(targets[r:], skip, c, buf, ebuf)
		if err != nil {
			t.Fatal(err)
		}
		launches++
		if !p.Done(len(c)) && p.Stop == 0 && p.Words == 0 {
			t.Fatalf("launch %d from target %d position %d: no progress", launches, r, skip)
		}
		for i := range min(p.Stop+1, len(c)) {
			counts[r+i] += int64(c[i])
		}
		out = append(out, buf[:p.Words]...)
		edges = append(edges, ebuf[:p.Words]...)
		if p.Done(len(c)) {
			break
		}
		r, skip = r+p.Stop, p.Resume
	}
	return out, edges, counts, launches
}

// The copy-all mode, through the C++ kernel (RunAll) and the Go reference
// (ReferenceAll), launch after launch with capacities from 1 neighbor to
// more than all: the launches together write every target's whole row in
// order with its edge indices, the counts are the degrees, and the two
// engines agree launch for launch; RunAllRaw (the synthesised top over the
// FPGA's buffer layout) leaves the same status, counts and neighbors.
func TestAllEnginesAgree(t *testing.T) {
	g := &gen{s: 77}
	for it := range 60 {
		n := 1 + g.intn(150)
		start := uint32(g.intn(1 << 20))
		degrees := []int{0, 1, 2, 5, 64, 65, 300}
		if it%10 == 0 {
			degrees = append(degrees, 2000)
		}
		adj := g.randomAdj(n, degrees)
		chunk := buildChunk(start, adj, g.intn(3))
		targets := make([]uint32, g.intn(120))
		for i := range targets {
			targets[i] = start + uint32(g.intn(n))
		}
		wantOut, wantEdges := directAll(start, adj, targets)
		capacities := []int{3, 64, 1 + g.intn(500), len(wantOut) + 1}
		if len(wantOut) < 3000 {
			capacities = append(capacities, 1)
		}
		for _, capacity := range capacities {
			type step struct {
				p     AllProgress
				words []int32
			}
			var refSteps []step
			ref := func(tg []uint32, skip uint32, counts, out, edges []int32) (AllProgress, error) {
				p, err := ReferenceAll(chunk, tg, skip, counts, out, edges)
				refSteps = append(refSteps, step{p, append(slices.Clone(counts), out[:p.Words]...)})
				return p, err
			}
			var runSteps []step
			run := func(tg []uint32, skip uint32, counts, out, edges []int32) (AllProgress, error) {
				p, err := RunAll(chunk, tg, skip, counts, out, edges)
				runSteps = append(runSteps, step{p, append(slices.Clone(counts), out[:p.Words]...)})
				// The FPGA's layout: one buffer, through the kernel's top.
				raw := make([]int32, AllResultWords(len(tg), len(out), true))
				if err := RunAllRaw(chunk, tg, raw, len(out), skip, true); err != nil {
					t.Fatal(err)
				}
				st, cn, o, e, _ := splitAll(raw, len(tg), len(out), true)
				if rp, err := ParseAllStatus(st, cn, len(out)); err != nil || rp != p || !slices.Equal(cn, counts) ||
					!slices.Equal(o[:p.Words], out[:p.Words]) || !slices.Equal(e[:p.Words], edges[:p.Words]) {
					t.Fatalf("case %d capacity %d: RunAllRaw %+v (%v) differs from RunAll %+v", it, len(out), rp, err, p)
				}
				return p, err
			}
			for name, fn := range map[string]func([]uint32, uint32, []int32, []int32, []int32) (AllProgress, error){"reference": ref, "kernel": run} {
				out, edges, counts, launches := allLaunches(t, fn, targets, capacity)
				if !slices.Equal(out, wantOut) || !slices.Equal(edges, wantEdges) {
					t.Fatalf("case %d capacity %d %s: %d neighbors in %d launches, want the targets' %d in order", it, capacity, name, len(out), launches, len(wantOut))
				}
				for r, tg := range targets {
					if counts[r] != int64(len(adj[tg-start])) {
						t.Fatalf("case %d capacity %d %s: target %d (node %d) counted %d, degree %d", it, capacity, name, r, tg, counts[r], len(adj[tg-start]))
					}
				}
			}
			if len(refSteps) != len(runSteps) {
				t.Fatalf("case %d capacity %d: %d reference launches, %d kernel launches", it, capacity, len(refSteps), len(runSteps))
			}
			for i := range refSteps {
				if refSteps[i].p != runSteps[i].p || !slices.Equal(refSteps[i].words, runSteps[i].words) {
					t.Fatalf("case %d capacity %d launch %d: kernel %+v, reference %+v", it, capacity, i, runSteps[i].p, refSteps[i].p)
				}
			}
		}
	}
}

// A row of a million neighbors, cut into launches of 4096: every launch
// but the last fills its buffer and resumes where it stopped.
func TestAllHubRow(t *testing.T) {
	nb := make([]uint32, 1_000_000)
	for i := range nb {
		nb[i] = uint32(i / 3)
	}
	adj := [][]uint32{{1, 2}, nb, {7}}
	chunk := buildChunk(10, adj, 0)
	targets := []uint32{10, 11, 12, 11}
	out, edges, counts, launches := allLaunches(t, func(tg []uint32, skip uint32, c, o, e []int32) (AllProgress, error) {
		return RunAll(chunk, tg, skip, c, o, e)
	}, targets, 4096)
	wantOut, wantEdges := directAll(10, adj, targets)
	if !slices.Equal(out, wantOut) || !slices.Equal(edges, wantEdges) || !slices.Equal(counts, []int64{2, 1_000_000, 1, 1_000_000}) {
		t.Fatalf("%d neighbors, counts %v", len(out), counts)
	}
	if want := (len(wantOut) + 4095) / 4096; launches != want {
		t.Fatalf("%d launches, want %d", launches, want)
	}
}

// ParseAllStatus refuses status words a faulty device could return.
func TestParseAllStatus(t *testing.T) {
	for _, tc := range []struct {
		name           string
		status, counts []int32
		capacity       int
		ok             bool
	}{
		{"done", []int32{2, 0}, []int32{3, 1}, 4, true},
		{"stopped", []int32{1, 2}, []int32{3, 1}, 4, true},
		{"stop past targets", []int32{3, 0}, []int32{3, 1}, 4, false},
		{"negative stop", []int32{-1, 0}, []int32{3, 1}, 4, false},
		{"done with resume", []int32{2, 5}, []int32{3, 1}, 4, false},
		{"count past stop", []int32{0, 3}, []int32{3, 1}, 4, false},
		{"negative count", []int32{2, 0}, []int32{-3, 1}, 4, false},
		{"past capacity", []int32{2, 0}, []int32{3, 2}, 4, false},
		{"short status", []int32{2}, []int32{3, 1}, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseAllStatus(tc.status, tc.counts, tc.capacity)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadOutput)) {
				t.Fatalf("ParseAllStatus(%v, %v, %d) = %+v, %v; want ok %v", tc.status, tc.counts, tc.capacity, p, err, tc.ok)
			}
		})
	}
}

// The copy-all mode's input checks, the same in both engines.
func TestAllErrors(t *testing.T) {
	chunk := buildChunk(10, [][]uint32{{1, 2}, {3}}, 0)
	for _, tc := range []struct {
		name    string
		targets []uint32
		skip    uint32
		counts  int
		out     int
		edges   int
		want    error
	}{
		{"counts", []uint32{10}, 0, 2, 4, 0, ErrBadOutput},
		{"edges", []uint32{10}, 0, 1, 4, 3, ErrBadOutput},
		{"no room", []uint32{10}, 0, 1, 0, 0, ErrBadOutput},
		{"outside", []uint32{12}, 0, 1, 4, 0, ErrTargetOutsideChunk},
		{"skip past row", []uint32{10}, 3, 1, 4, 0, ErrBadOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edges []int32
			if tc.edges > 0 {
				edges = make([]int32, tc.edges)
			}
			_, e1 := RunAll(chunk, tc.targets, tc.skip, make([]int32, tc.counts), make([]int32, tc.out), edges)
			_, e2 := ReferenceAll(chunk, tc.targets, tc.skip, make([]int32, tc.counts), make([]int32, tc.out), edges)
			if !errors.Is(e1, tc.want) || !errors.Is(e2, tc.want) || e1.Error() != e2.Error() {
				t.Fatalf("RunAll %v, ReferenceAll %v; want %v", e1, e2, tc.want)
			}
		})
	}
	if err := RunAllRaw(chunk, []uint32{10}, make([]int32, 3), 4, 0, false); !errors.Is(err, ErrBadOutput) {
		t.Fatalf("RunAllRaw into a short buffer: %v", err)
	}
}

// FuzzRunAll feeds arbitrary chunks, targets, skips and capacities to the
// copy-all mode: RunAll must never crash and must agree with ReferenceAll,
// error for error, word for word.
func FuzzRunAll(f *testing.F) {
	nb := make([]uint32, 100)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	f.Add(wordsToBytes(buildChunk(5, [][]uint32{nil, {1}, nb, {3, 9}, nil}, 3)), wordsToBytes([]uint32{7, 8, 5}), uint32(0), uint16(30), true)
	f.Add(wordsToBytes(buildChunk(0, [][]uint32{{1, 2, 3}, {4}}, 0)), wordsToBytes([]uint32{0, 1, 1}), uint32(2), uint16(1), false)
	f.Add([]byte{1, 0, 0, 0}, []byte{0, 0, 0, 0}, uint32(0), uint16(0), false)
	f.Fuzz(func(t *testing.T, chunkBytes, targetBytes []byte, skip uint32, capacity uint16, edges bool) {
		chunk, targets := bytesToWords(chunkBytes), bytesToWords(targetBytes)
		c1, c2 := make([]int32, len(targets)), make([]int32, len(targets))
		o1, o2 := make([]int32, capacity), make([]int32, capacity)
		var e1, e2 []int32
		if edges {
			e1, e2 = make([]int32, capacity), make([]int32, capacity)
		}
		p1, err1 := RunAll(chunk, targets, skip, c1, o1, e1)
		p2, err2 := ReferenceAll(chunk, targets, skip, c2, o2, e2)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("RunAll error %v, ReferenceAll error %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		// Neither engine writes past the neighbors it counts: the buffers
		// agree whole.
		if p1 != p2 || !slices.Equal(c1, c2) || !slices.Equal(o1, o2) || !slices.Equal(e1, e2) {
			t.Fatalf("RunAll %+v %v %v, ReferenceAll %+v %v %v", p1, c1, o1[:p1.Words], p2, c2, o2[:p2.Words])
		}
	})
}
