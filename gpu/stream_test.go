package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/gpu"
	"github.com/streamsampler/streamsampler/host"
)

// writeGraph writes the CSR as a chunked graph directory of small chunks
// (many chunk boundaries) and opens it.
func writeGraph(t *testing.T, indptr []uint64, indices []uint32, chunkSize int64) *chunkfmt.Graph {
	t.Helper()
	n := uint32(len(indptr) - 1)
	dir := filepath.Join(t.TempDir(), "graph")
	w, err := chunkfmt.NewWriter(dir, n, chunkSize, chunkfmt.Options{Dedup: true, SelfLoops: chunkfmt.SelfLoopsKeep})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(0); v < n; v++ {
		if err := w.Append(indices[indptr[v]:indptr[v+1]]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := chunkfmt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// checkSink compares what StreamCSR passes with a CSR held by the test,
// without allocating: pieces in order, contiguous, equal word for word.
type checkSink struct {
	indptr  []uint64
	indices []uint32
	next    uint64
	pieces  int
	err     error
	done    bool
}

func (s *checkSink) Indices(first uint64, a []uint32) error {
	switch {
	case s.err != nil:
	case first != s.next || first+uint64(len(a)) > uint64(len(s.indices)):
		s.err = errors.New("piece out of order or past the end")
	case !slices.Equal(a, s.indices[first:first+uint64(len(a))]):
		s.err = errors.New("piece differs from the CSR")
	}
	s.next = first + uint64(len(a))
	s.pieces++
	return nil
}

func (s *checkSink) Indptr(p []uint64) error {
	if s.err == nil && (s.next != uint64(len(s.indices)) || !slices.Equal(p, s.indptr)) {
		s.err = fmt.Errorf("indptr after %d of %d edges, equal %v", s.next, len(s.indices), slices.Equal(p, s.indptr))
	}
	s.done = true
	return nil
}

// allocated returns the bytes f allocates on the Go heap (TotalAlloc).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestStreamCSRHeap: streaming a graph (what Open does) passes exactly its
// CSR and allocates only indptr on the Go heap — O(num_nodes), not
// O(edges) — while CSRFromGraph, the path Open took before, allocates the
// edges too (which shows that the measurement sees such a copy).
func TestStreamCSRHeap(t *testing.T) {
	const n = 1 << 15
	indptr, indices := rmat(n, 600_000, 11)
	g := writeGraph(t, indptr, indices, 64<<10)
	if g.NumChunks() < 20 {
		t.Fatalf("only %d chunks: want many chunk boundaries", g.NumChunks())
	}
	indptrBytes := uint64(8 * (n + 1))
	edgeBytes := uint64(4 * len(indices))
	for rep := 0; rep < 2; rep++ { // the second run reads chunks that already passed their CRC
		sink := &checkSink{indptr: indptr, indices: indices}
		var err error
		got := allocated(func() { err = gpu.StreamCSR(g, sink) })
		if err != nil || sink.err != nil || !sink.done {
			t.Fatalf("StreamCSR: %v, sink: %v, complete %v", err, sink.err, sink.done)
		}
		// Slack for the runtime's own bookkeeping; far below one chunk.
		if got > indptrBytes+16<<10 {
			t.Errorf("run %d: StreamCSR allocated %d bytes for %d nodes (indptr %d B) and %d edges (%d B): want indptr only",
				rep, got, n, indptrBytes, len(indices), edgeBytes)
		}
		t.Logf("run %d: StreamCSR allocated %d B (indptr %d B, edges %d B) in %d pieces", rep, got, indptrBytes, edgeBytes, sink.pieces)
	}
	got := allocated(func() {
		if _, _, err := gpu.CSRFromGraph(g); err != nil {
			t.Fatal(err)
		}
	})
	if got < indptrBytes+edgeBytes {
		t.Errorf("CSRFromGraph allocated %d B, less than its CSR's %d B: the measurement is blind", got, indptrBytes+edgeBytes)
	}
}

// TestStreamCSRSinkError: an error from the sink stops the stream and is
// returned as is.
func TestStreamCSRSinkError(t *testing.T) {
	indptr, indices := rmat(3000, 20000, 5)
	g := writeGraph(t, indptr, indices, 16<<10)
	stop := errors.New("sink full")
	calls := 0
	err := gpu.StreamCSR(g, sinkFunc{indices: func(uint64, []uint32) error { calls++; return stop }})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls, want the sink's error after 1", err, calls)
	}
}

type sinkFunc struct {
	indices func(uint64, []uint32) error
}

func (s sinkFunc) Indices(first uint64, a []uint32) error { return s.indices(first, a) }
func (s sinkFunc) Indptr([]uint64) error                  { return nil }

// TestOpenStreamsWithCPUStandIn: Open (graph streamed chunk by chunk
// through ssg_create_empty / ssg_load_indices / ssg_load_indptr) samples
// the same epochs as host.Reference, and the library's loading checks
// refuse pieces out of order.
func TestOpenStreamsWithCPUStandIn(t *testing.T) {
	needCgo(t)
	path := buildFake(t, "libfake.so")
	indptr, indices := rmat(3000, 20000, 5)
	g := writeGraph(t, indptr, indices, 8<<10)
	b, err := gpu.Open(path, 0, g, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	csr := &host.CSR{Indptr: indptr, Indices: indices}
	seeds := pickSeeds(3000, 0.1, 1)
	for _, fan := range [][]int{{15, 10, 5}, {64}} {
		key := epoch.Key{Seed: 3, Epoch: 2}
		want, err := host.Reference(csr, seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.SampleEpoch(context.Background(), seeds, fan, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := diffResults(got, want); err != nil {
			t.Errorf("fanouts %v: %v", fan, err)
		}
	}
	// The library's own checks, reached through an unchecked sink.
	for _, tc := range []struct {
		name string
		fill func(s gpu.CSRSink) error
		want string
	}{
		{"gap", func(s gpu.CSRSink) error { return s.Indices(1, indices[1:5]) }, "the next edge is 0"},
		{"past the end", func(s gpu.CSRSink) error { return s.Indices(0, append(slices.Clone(indices), 0)) }, "indices come in order"},
		{"indptr early", func(s gpu.CSRSink) error { return s.Indptr(indptr) }, "not after all edges|after 0 of"},
	} {
		err := gpu.OpenStreamForTest(path, uint32(len(indptr)-1), uint64(len(indices)), tc.fill)
		if !errors.Is(err, gpu.ErrInvalid) || !matchAny(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid with %q", tc.name, err, tc.want)
		}
	}
}

func matchAny(s, alts string) bool {
	for _, a := range strings.Split(alts, "|") {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}
