package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// smallGraphText is n pseudo-random edges over 2000 nodes.
func smallGraphText(n int, seed uint64) []byte {
	var b []byte
	x := seed | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = fmt.Appendf(b, "%d %d\n", x%2000, (x>>20)%2000)
	}
	return b
}

var killBuildOptions = BuildOptions{ChunkSize: 4096, Dedup: true}

// runKilledBuild builds in (read from standard input, so that the spool
// step happens) into out in a child process that SIGKILLs itself when
// the build reaches step: a kill at an exact point of the build, through
// the failpoint seam rather than timing luck.
func runKilledBuild(t *testing.T, out, step, in string, force bool) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("kills a child process; linux only")
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildKilledAtEveryStep$")
	cmd.Env = append(os.Environ(), "INGEST_KILL_STEP="+step, "INGEST_KILL_OUT="+out, fmt.Sprintf("INGEST_KILL_FORCE=%v", force))
	cmd.Stdin = f
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child at %s: %v\n%s", step, err, msg)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child at %s was not killed: %v\n%s", step, err, msg)
	}
}

// killedBuildLeftover kills a build of out at step and returns the
// temporary directory it left behind.
func killedBuildLeftover(t *testing.T, out, step string) string {
	t.Helper()
	in := writeFile(t, t.TempDir(), "in.txt", smallGraphText(500, 7))
	runKilledBuild(t, out, step, in, false)
	temps := tempDirsOf(t, out)
	if len(temps) != 1 {
		t.Fatalf("a build killed at %s left %v", step, temps)
	}
	return temps[0]
}

// tempDirsOf lists the entries beside out named as out's temporaries.
func tempDirsOf(t *testing.T, out string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+filepath.Base(out)+".tmp-") {
			temps = append(temps, filepath.Join(filepath.Dir(out), e.Name()))
		}
	}
	return temps
}

// fingerprintOf verifies the graph in dir and returns its fingerprint.
func fingerprintOf(t *testing.T, dir string) chunkfmt.Fingerprint {
	t.Helper()
	if err := chunkfmt.Verify(dir); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m.Fingerprint()
}

// TestBuildKilledAtEveryStep kills a build (SIGKILL, no chance to clean
// up) at every step, into a new output and replacing an old graph. After
// each kill the output is the old state (absent, or the old graph intact)
// or, once installed, the new graph, complete: never a part. The next
// build of the same output removes what the killed one left and leaves
// only the graph.
func TestBuildKilledAtEveryStep(t *testing.T) {
	if step := os.Getenv("INGEST_KILL_STEP"); step != "" {
		failpoint.Enable( // never restored: the process is killed at the step
			func(s string) error {
				if s == step {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal is on its way
				}
				return nil
			})
		o := killBuildOptions
		o.Force = os.Getenv("INGEST_KILL_FORCE") == "true"
		_, err := Build(context.Background(), []string{"-"}, os.Getenv("INGEST_KILL_OUT"), o)
		t.Fatalf("the build never reached step %s: %v", step, err)
	}
	inDir := t.TempDir()
	oldIn := writeFile(t, inDir, "old.txt", smallGraphText(3000, 1))
	newIn := writeFile(t, inDir, "new.txt", smallGraphText(4000, 2))
	ref := func(in string) chunkfmt.Fingerprint {
		out := filepath.Join(t.TempDir(), "ref")
		if _, err := Build(context.Background(), []string{in}, out, killBuildOptions); err != nil {
			t.Fatal(err)
		}
		return fingerprintOf(t, out)
	}
	oldFP, newFP := ref(oldIn), ref(newIn)
	if oldFP == newFP {
		t.Fatal("the old and new graphs are the same")
	}
	for _, replace := range []bool{false, true} {
		for _, step := range buildSteps {
			t.Run(fmt.Sprintf("replace=%v/%s", replace, step), func(t *testing.T) {
				parent := t.TempDir()
				out := filepath.Join(parent, "g")
				if replace {
					if _, err := Build(context.Background(), []string{oldIn}, out, killBuildOptions); err != nil {
						t.Fatal(err)
					}
				}
				runKilledBuild(t, out, step, newIn, replace)
				switch {
				case step == stepInstalled:
					if fp := fingerprintOf(t, out); fp != newFP {
						t.Fatalf("killed after install: %+v, want the new graph %+v", fp, newFP)
					}
				case replace:
					if fp := fingerprintOf(t, out); fp != oldFP {
						t.Fatalf("killed at %s: %+v, want the old graph %+v", step, fp, oldFP)
					}
				default:
					if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("killed at %s: the output exists (%v)", step, err)
					}
				}
				left := tempDirsOf(t, out)
				wantLeft := 1
				if step == stepInstalled {
					wantLeft = 0
				}
				if len(left) != wantLeft {
					t.Fatalf("killed at %s: temporaries %v, want %d", step, left, wantLeft)
				}
				o := killBuildOptions
				o.Force = true
				sum, err := Build(context.Background(), []string{newIn}, out, o)
				if err != nil {
					t.Fatal(err)
				}
				if len(sum.StaleRemoved) != wantLeft || (wantLeft == 1 && sum.StaleRemoved[0] != left[0]) {
					t.Fatalf("the next build removed %v; the kill left %v", sum.StaleRemoved, left)
				}
				assertClean(t, parent, "g")
				if fp := fingerprintOf(t, out); fp != newFP {
					t.Fatalf("after the next build: %+v, want %+v", fp, newFP)
				}
			})
		}
	}
}
