package xrt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/streamsampler/streamsampler/internal/aio"
	"github.com/streamsampler/streamsampler/rng"
)

// testGraph is a small deterministic graph laid out as chunks.
type testGraph struct {
	adj       [][]uint32 // adjacency of node i, sorted
	starts    []uint32   // first node of each chunk
	chunkSize int        // bytes, a multiple of 4096
}

// newTestGraph makes numNodes nodes with degrees 0..maxDeg (mix64-driven),
// packed into chunks of chunkSize bytes, nodesPerChunk nodes each.
func newTestGraph(numNodes, nodesPerChunk, maxDeg, chunkSize int) *testGraph {
	g := &testGraph{chunkSize: chunkSize}
	s := uint64(12345)
	next := func() uint64 { s += 0x9E3779B97F4A7C15; return rng.Mix64(s) }
	for i := 0; i < numNodes; i++ {
		d := int(rng.Below(next(), uint32(maxDeg+1)))
		nb := make([]uint32, d)
		v := uint32(rng.Below(next(), 50))
		for j := range nb {
			nb[j] = v
			v += 1 + uint32(rng.Below(next(), 20))
		}
		g.adj = append(g.adj, nb)
	}
	for st := 0; st < numNodes; st += nodesPerChunk {
		g.starts = append(g.starts, uint32(st))
	}
	return g
}

// chunk returns chunk i's bytes, exactly chunkSize long (layout of
// docs/FORMAT.md: [n_nodes][start][off_0..off_n][neighbors], zero-filled).
func (g *testGraph) chunk(t testing.TB, i int) []byte {
	start := int(g.starts[i])
	end := len(g.adj)
	if i+1 < len(g.starts) {
		end = int(g.starts[i+1])
	}
	n := end - start
	w := []uint32{uint32(n), uint32(start)}
	off := uint32(3 + n)
	for v := start; v < end; v++ {
		w = append(w, off)
		off += uint32(len(g.adj[v]))
	}
	w = append(w, off)
	for v := start; v < end; v++ {
		w = append(w, g.adj[v]...)
	}
	if len(w)*4 > g.chunkSize {
		t.Fatalf("chunk %d needs %d bytes, chunk size %d", i, len(w)*4, g.chunkSize)
	}
	b := make([]byte, g.chunkSize)
	for j, x := range w {
		binary.LittleEndian.PutUint32(b[4*j:], x)
	}
	return b
}

// writeFile writes edges.chunks in dir and returns its path.
func (g *testGraph) writeFile(t testing.TB, dir string) string {
	p := filepath.Join(dir, "edges.chunks")
	var all []byte
	for i := range g.starts {
		all = append(all, g.chunk(t, i)...)
	}
	if err := os.WriteFile(p, all, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// targets returns the nodes of chunk i picked by keep.
func (g *testGraph) targets(i int, keep func(v uint32) bool) []uint32 {
	end := uint32(len(g.adj))
	if i+1 < len(g.starts) {
		end = g.starts[i+1]
	}
	var ts []uint32
	for v := g.starts[i]; v < end; v++ {
		if keep(v) {
			ts = append(ts, v)
		}
	}
	return ts
}

// want is the reference sample: rng.Sample per target.
func (g *testGraph) want(targets []uint32, fanout int, key uint64, replace bool) []int32 {
	out := make([]int32, len(targets)*fanout)
	for r, v := range targets {
		rng.Sample(out[r*fanout:(r+1)*fanout], g.adj[v], v, key, replace)
	}
	return out
}

// openDirect opens path with O_DIRECT, falling back to a buffered open
// where the file system refuses it (tmpfs gives EINVAL; every other
// platform than Linux); it reports which.
func openDirect(t testing.TB, path string) (f *os.File, direct bool) {
	f, direct, err := aio.OpenDirect(path)
	if err != nil {
		t.Fatal(err)
	}
	return f, direct
}

func putU32s(b []byte, v []uint32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
}

func getI32s(b []byte, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// isAligned reports whether b starts at a multiple of a.
func isAligned(b []byte, a uintptr) bool {
	return uintptr(unsafe.Pointer(&b[0]))%a == 0
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// sampleOnDevice runs the host's whole call sequence for one chunk on dev
// through the Device interface: P2P read of the chunk, targets copied and
// synced, arguments set, run, result synced back. It returns the result
// words as the host sees them.
func sampleOnDevice(t testing.TB, dev Device, uuid UUID, f *os.File, g *testGraph, chunkIdx int,
	targets []uint32, fanout int, key uint64, replace bool) ([]int32, error) {
	t.Helper()
	samples, _, err := sampleOnDeviceEdges(t, dev, uuid, f, g, chunkIdx, targets, fanout, key, replace, false)
	return samples, err
}

// sampleOnDeviceEdges is sampleOnDevice that sets argument 7 (edges) and,
// when it is set, sizes the result buffer twice and returns the
// chunk-local edge indices that follow the samples.
func sampleOnDeviceEdges(t testing.TB, dev Device, uuid UUID, f *os.File, g *testGraph, chunkIdx int,
	targets []uint32, fanout int, key uint64, replace, edges bool) ([]int32, []int32, error) {
	t.Helper()
	fail := func(err error) ([]int32, []int32, error) { return nil, nil, err }
	words := len(targets) * fanout
	edgeArg := uint32(0)
	if edges {
		edgeArg = 1
	}
	k, err := dev.OpenKernel(uuid, SampleKernel)
	if err != nil {
		return fail(err)
	}
	defer k.Close()
	group := func(arg int) int {
		g, err := k.GroupID(arg)
		if err != nil {
			t.Fatalf("GroupID(%d): %v", arg, err)
		}
		return g
	}
	chunkBO, err := dev.AllocBO(g.chunkSize, BOP2P, group(ArgChunk))
	if err != nil {
		return fail(err)
	}
	defer chunkBO.Free()
	if err := ReadP2P(f, chunkBO, 0, int64(chunkIdx)*int64(g.chunkSize), g.chunkSize); err != nil {
		return fail(err)
	}
	tb, err := dev.AllocBO(max(4*len(targets), 4), BONormal, group(ArgTargets))
	if err != nil {
		return fail(err)
	}
	defer tb.Free()
	tm, err := tb.Map()
	if err != nil {
		return fail(err)
	}
	putU32s(tm, targets)
	if err := tb.Sync(ToDevice, tb.Size(), 0); err != nil {
		return fail(err)
	}
	rb, err := dev.AllocBO(max(4*words*int(1+edgeArg), 4), BONormal, group(ArgResult))
	if err != nil {
		return fail(err)
	}
	defer rb.Free()
	run, err := k.NewRun()
	if err != nil {
		return fail(err)
	}
	defer run.Close()
	rep := uint32(0)
	if replace {
		rep = 1
	}
	for _, err := range []error{
		run.SetBO(ArgChunk, chunkBO), run.SetBO(ArgResult, rb), run.SetBO(ArgTargets, tb),
		run.SetUint32(ArgNTargets, uint32(len(targets))), run.SetUint32(ArgFanout, uint32(fanout)),
		run.SetUint64(ArgKey, key), run.SetUint32(ArgReplace, rep), run.SetUint32(ArgEdges, edgeArg),
	} {
		if err != nil {
			return fail(err)
		}
	}
	if err := run.Start(); err != nil {
		return fail(err)
	}
	st, err := run.Wait(30 * time.Second)
	if err != nil {
		return fail(err)
	}
	if st != StateCompleted {
		t.Fatalf("Wait returned state %v and no error", st)
	}
	if err := rb.Sync(FromDevice, rb.Size(), 0); err != nil {
		return fail(err)
	}
	rm, err := rb.Map()
	if err != nil {
		return fail(err)
	}
	all := getI32s(rm, words*int(1+edgeArg))
	if !edges {
		return all, nil, nil
	}
	return all[:words], all[words:], nil
}
