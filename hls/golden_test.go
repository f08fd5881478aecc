package hls

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/rng"
)

var update = flag.Bool("update", false, "rewrite testdata/golden_kernel.bin from the Go reference")

// goldenPath is the committed golden file that the C++ testbench checks
// the kernel against. Its format, all little-endian:
//
//	"SKGOLD3\n"  u32 n_cases
//	per case: u32 fanout, u32 replace, u32 edges, u32 walk, u64 key,
//	          u32 chunk_words, u32 n_targets, chunk words, targets (with
//	          walk != 0: the n_targets nodes, then their n_targets walk ids),
//	          n_targets×fanout expected int32, and with edges another
//	          n_targets×fanout: the expected chunk-local edge indices (the
//	          kernel's result buffer)
const goldenPath = "testdata/golden_kernel.bin"

const goldenMagic = "SKGOLD3\n"

type goldenCase struct {
	chunk, targets []uint32
	fanout         int
	key            uint64
	replace, edges bool
	walk           uint32   // kernel argument 8: 0 sampling, else a walk step with attempt0 = walk-1
	walks          []uint32 // walk ids, one per target, when walk != 0
	want           []int32  // samples (or candidates), then edge indices when edges
}

// goldenCases are the inputs of the golden file: degrees on and around
// every fanout boundary, target counts that are not multiples of the 32
// lanes, a hub, node ids near 2^31, an empty target list and the DESIGN §3
// vectors. Deterministic, so the file can be regenerated and compared.
func goldenCases() []goldenCase {
	g := &gen{s: 0x601d}
	var cases []goldenCase
	add := func(chunk, targets []uint32, fanout int, key uint64, replace bool) {
		cases = append(cases, goldenCase{chunk: chunk, targets: targets, fanout: fanout, key: key, replace: replace})
	}
	for _, k := range []int{1, 2, 5, 10, 15, 16, 25, 31, 32, 33, 63, 64} {
		adj := g.randomAdj(60, []int{0, 1, max(k-1, 0), k, k + 1, 2 * k, 3*k + 5})
		start := uint32(g.intn(1 << 20))
		chunk := buildChunk(start, adj, g.intn(4))
		targets := allNodes(start, len(adj))
		for i := 0; i < 11; i++ { // repeats, out of order: 71 targets
			targets = append(targets, start+uint32(g.intn(len(adj))))
		}
		for _, replace := range []bool{false, true} {
			add(chunk, targets, k, g.next(), replace)
		}
	}
	hub := [][]uint32{g.sortedNeighbors(5), g.sortedNeighbors(10000), nil, g.sortedNeighbors(64)}
	hubChunk := buildChunk(77, hub, 0)
	for _, k := range []int{15, 64} {
		for _, replace := range []bool{false, true} {
			add(hubChunk, []uint32{78, 77, 78, 80, 79, 78}, k, g.next(), replace)
		}
	}
	high := g.randomAdj(40, []int{0, 3, 12, 40})
	const highStart = 1<<31 - 40
	add(buildChunk(highStart, high, 9), allNodes(highStart, 40), 12, g.next(), false)
	add(buildChunk(highStart, high, 9), nil, 12, g.next(), false)
	nb := make([]uint32, 100)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	design := buildChunk(5, [][]uint32{nil, {1}, nb, {3, 9}, nil}, 7)
	add(design, []uint32{7}, 5, rng.Key(42, 0, 0), false)
	add(design, []uint32{7}, 5, rng.Key(42, 0, 0), true)
	add(design, []uint32{8, 9, 5, 6}, 4, rng.Key(42, 0, 0), false)
	// Edge indices: the same inputs again with edges = 1, for fanouts on
	// and off the lane boundaries, the hub and the design vectors (no new
	// draws from g, so the cases above stay as they were).
	for i, n := 0, len(cases); i < n; i++ {
		if k := cases[i].fanout; k == 1 || k == 5 || k == 15 || k == 32 || k == 33 || k == 64 || k == 12 || k == 4 {
			c := cases[i]
			c.edges = true
			cases = append(cases, c)
		}
	}
	// Walk steps (argument 8): walkers on the chunks above, counts on and
	// off the lanes, first attempts 0, 1, 63 and 2^32-2, with and without
	// edge indices, and the DESIGN §3 walk vectors (walk 7 at node 7 of
	// degree 1000: candidates 987 and 410 at step 1, 634 at step 2).
	walkCase := func(chunk, nodes []uint32, k int, key uint64, a0 uint32, edges bool) {
		walks := make([]uint32, len(nodes))
		for i := range walks {
			walks[i] = uint32(g.next())
		}
		cases = append(cases, goldenCase{chunk: chunk, targets: nodes, walks: walks, fanout: k, key: key,
			walk: a0 + 1, edges: edges})
	}
	for i, k := range []int{1, 2, 5, 32, 33, 64} {
		j := slices.IndexFunc(cases, func(c goldenCase) bool { return c.fanout == k }) // the chunk with degrees around k
		c := cases[j]
		nodes := slices.Clone(c.targets[:len(c.targets)-g.intn(40)])
		walkCase(c.chunk, nodes, k, rng.WalkKey(g.next(), uint32(1+i)), []uint32{0, 1, 63, 1<<32 - 2}[i%4], i%2 == 1)
	}
	walkCase(hubChunk, []uint32{78, 77, 78, 80, 79, 78}, 8, rng.WalkKey(3, 9), 0, true)
	walkCase(buildChunk(highStart, high, 9), allNodes(highStart, 40), 1, rng.WalkKey(4, 1), 0, false)
	walkCase(buildChunk(highStart, high, 9), nil, 3, rng.WalkKey(4, 1), 0, false)
	nb1000 := make([]uint32, 1000)
	for i := range nb1000 {
		nb1000[i] = uint32(1000 + i)
	}
	walkDesign := buildChunk(5, [][]uint32{nil, {1}, nb1000, {3, 9}, nil}, 5)
	for _, tc := range []struct {
		step, a0 uint32
		k        int
	}{{1, 0, 2}, {1, 1, 1}, {2, 0, 1}} {
		cases = append(cases, goldenCase{chunk: walkDesign, targets: []uint32{7, 9, 8}, walks: []uint32{7, 7, 3},
			fanout: tc.k, key: rng.WalkKey(42, tc.step), walk: tc.a0 + 1, edges: tc.step == 1})
	}
	return cases
}

func encodeGolden(cases []goldenCase) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(goldenMagic)
	le := binary.LittleEndian
	b.Write(le.AppendUint32(nil, uint32(len(cases))))
	for i, c := range cases {
		n := len(c.targets) * c.fanout
		want := make([]int32, n, 2*n)
		var edges []int32
		if c.edges {
			edges = make([]int32, n)
		}
		var err error
		if c.walk != 0 {
			err = ReferenceWalkEdges(c.chunk, c.targets, c.walks, want, edges, c.fanout, c.key, c.walk-1)
		} else {
			err = ReferenceEdges(c.chunk, c.targets, want, edges, c.fanout, c.key, c.replace)
		}
		if err != nil {
			return nil, fmt.Errorf("golden case %d: %w", i, err)
		}
		want = append(want, edges...)
		var h []byte
		h = le.AppendUint32(h, uint32(c.fanout))
		h = le.AppendUint32(h, b2u(c.replace))
		h = le.AppendUint32(h, b2u(c.edges))
		h = le.AppendUint32(h, c.walk)
		h = le.AppendUint64(h, c.key)
		h = le.AppendUint32(h, uint32(len(c.chunk)))
		h = le.AppendUint32(h, uint32(len(c.targets)))
		b.Write(h)
		binary.Write(&b, le, c.chunk)
		binary.Write(&b, le, c.targets)
		binary.Write(&b, le, c.walks)
		binary.Write(&b, le, want)
	}
	return b.Bytes(), nil
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func decodeGolden(data []byte) ([]goldenCase, error) {
	r := bytes.NewReader(data)
	magic := make([]byte, len(goldenMagic))
	if _, err := r.Read(magic); err != nil || string(magic) != goldenMagic {
		return nil, errors.New("golden: bad magic")
	}
	le := binary.LittleEndian
	var n uint32
	if err := binary.Read(r, le, &n); err != nil {
		return nil, err
	}
	cases := make([]goldenCase, n)
	for i := range cases {
		var h struct {
			Fanout, Replace, Edges, Walk uint32
			Key                          uint64
			Words, Targets               uint32
		}
		if err := binary.Read(r, le, &h); err != nil {
			return nil, fmt.Errorf("golden case %d header: %w", i, err)
		}
		c := goldenCase{
			chunk: make([]uint32, h.Words), targets: make([]uint32, h.Targets),
			fanout: int(h.Fanout), key: h.Key, replace: h.Replace != 0, edges: h.Edges != 0, walk: h.Walk,
			want: make([]int32, int(h.Targets)*int(h.Fanout)*(1+int(h.Edges&1))),
		}
		if c.walk != 0 {
			c.walks = make([]uint32, h.Targets)
		}
		for _, v := range []any{c.chunk, c.targets, c.walks, c.want} {
			if err := binary.Read(r, le, v); err != nil {
				return nil, fmt.Errorf("golden case %d: %w", i, err)
			}
		}
		cases[i] = c
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("golden: %d trailing bytes", r.Len())
	}
	return cases, nil
}

// The committed golden file is exactly what the Go reference produces
// today (go test ./hls -run Golden -update rewrites it).
func TestGoldenFileIsCurrent(t *testing.T) {
	want, err := encodeGolden(goldenCases())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: regenerate with go test ./hls -run Golden -update", goldenPath)
	}
}

func TestGoldenThroughEngines(t *testing.T) {
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := decodeGolden(data)
	if err != nil {
		t.Fatal(err)
	}
	edgeCases, walkCases := 0, 0
	for _, e := range engines {
		for i, c := range cases {
			if c.edges || c.walk != 0 {
				continue
			}
			out := make([]int32, len(c.want))
			if err := e.fn(c.chunk, c.targets, out, c.fanout, c.key, c.replace); err != nil {
				t.Fatalf("%s case %d: %v", e.name, i, err)
			}
			if !slices.Equal(out, c.want) {
				t.Fatalf("%s case %d: output differs from golden", e.name, i)
			}
		}
	}
	for _, e := range edgeEngines {
		for i, c := range cases {
			if !c.edges || c.walk != 0 {
				continue
			}
			edgeCases++
			n := len(c.want) / 2
			out, edges := make([]int32, n), make([]int32, n)
			if err := e.fn(c.chunk, c.targets, out, edges, c.fanout, c.key, c.replace); err != nil {
				t.Fatalf("%s case %d: %v", e.name, i, err)
			}
			if !slices.Equal(out, c.want[:n]) || !slices.Equal(edges, c.want[n:]) {
				t.Fatalf("%s case %d: output differs from golden", e.name, i)
			}
		}
	}
	for _, e := range walkEngines {
		for i, c := range cases {
			if c.walk == 0 {
				continue
			}
			walkCases++
			n := len(c.targets) * c.fanout
			out := make([]int32, n)
			var edges []int32
			if c.edges {
				edges = make([]int32, n)
			}
			if err := e.fn(c.chunk, c.targets, c.walks, out, edges, c.fanout, c.key, c.walk-1); err != nil {
				t.Fatalf("%s case %d: %v", e.name, i, err)
			}
			if !slices.Equal(out, c.want[:n]) || (e.edges && !slices.Equal(edges, c.want[n:])) {
				t.Fatalf("%s case %d: output differs from golden", e.name, i)
			}
		}
	}
	if edgeCases == 0 {
		t.Fatal("the golden file has no case with edge indices")
	}
	if walkCases == 0 {
		t.Fatal("the golden file has no walk-step case")
	}
}

// TestCSim builds the C-simulation testbench with g++ (what `make -C hls
// csim` and vitis_hls csim run) and runs it on the golden file, then on a
// copy with one expected value changed, which it must reject.
func TestCSim(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found; the C-simulation testbench is not built")
	}
	dir := t.TempDir()
	tb := filepath.Join(dir, "sample_kernel_tb")
	build := exec.Command(cxx, "-O2", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wno-unknown-pragmas", "-Wno-unused-label",
		"-o", tb, "sample_kernel_tb.cpp", "sample_kernel.cpp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(tb, goldenPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("testbench: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))

	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	data = slices.Clone(data)
	data[len(data)-4]++ // the last expected value of the last case
	bad := filepath.Join(dir, "bad.bin")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(tb, bad).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("testbench accepted a corrupted golden file: %v\n%s", err, out)
	}
}
