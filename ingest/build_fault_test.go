package ingest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/internal/failpoint"
)

func TestBuildCancelledMidway(t *testing.T) {
	in := writeFile(t, t.TempDir(), "a.txt", randomEdgeText(20000))
	for _, step := range []string{stepPass2, stepPass3} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		restore := failpoint.Enable(func(s string) error {
			if s == step {
				cancel()
			}
			return nil
		})
		_, err := Build(ctx, []string{in}, filepath.Join(dir, "g"), BuildOptions{})
		restore()
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at %s: err = %v", step, err)
		}
		assertClean(t, dir)
	}
}

// TestBuildWriteError runs a build in a child process whose file size
// limit (RLIMIT_FSIZE) is too small for the output, which makes writes
// fail with EFBIG as on a full disk: the build must fail cleanly.
func TestBuildWriteError(t *testing.T) {
	if os.Getenv("INGEST_FSIZE_CHILD") != "" {
		signal.Ignore(syscall.SIGXFSZ)
		lim := syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Skip("setrlimit:", err)
		}
		in, out := os.Getenv("INGEST_IN"), os.Getenv("INGEST_OUT")
		_, err := Build(context.Background(), []string{in}, out, BuildOptions{})
		if err == nil {
			t.Fatal("build succeeded past the file size limit")
		}
		t.Logf("BUILD ERROR: %v", err)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	// 400k edges: the spool and CSR temp files exceed 1 MiB.
	in := writeFile(t, t.TempDir(), "a.txt", randomEdgeText(400000))
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildWriteError$", "-test.v")
	cmd.Env = append(os.Environ(), "INGEST_FSIZE_CHILD=1", "INGEST_IN="+in, "INGEST_OUT="+filepath.Join(dir, "g"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "BUILD ERROR:") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("child output lacks the write error:\n%s", out)
	}
	assertClean(t, dir)
}

// TestBuildMemoryBound builds a graph with many edges over few nodes and
// checks that the Go heap never holds anything like the edges: peak heap
// growth must stay far below 8 bytes per edge.
func TestBuildMemoryBound(t *testing.T) {
	edges := 8 << 20
	const n = 1 << 12
	pairs := make([]uint32, 2*edges)
	x := uint64(12345)
	for i := range pairs {
		x = x*6364136223846793005 + 1442695040888963407
		pairs[i] = uint32(x>>40) % n
	}
	in := writeFile(t, t.TempDir(), "g.bin32", bin32(pairs))
	pairs = nil
	out := filepath.Join(t.TempDir(), "g")
	var sum *Summary
	grow, err := heapGrowth(func() (err error) {
		sum, err = Build(context.Background(), []string{in}, out, BuildOptions{ChunkSize: 256 << 10})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.NumEdges != uint64(edges) {
		t.Fatalf("%d edges stored, want %d", sum.NumEdges, edges)
	}
	limit := int64(edges) * 8 / 4
	t.Logf("%d edges: peak heap growth %.1f MiB (edges·8 = %.1f MiB, limit %.1f MiB)", edges, float64(grow)/(1<<20), float64(edges*8)/(1<<20), float64(limit)/(1<<20))
	if grow > limit {
		t.Fatalf("peak heap grew by %d bytes, more than %d (1/4 of edges·8)", grow, limit)
	}
}
