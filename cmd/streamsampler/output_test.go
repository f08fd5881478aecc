package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// dirFiles lists dir's entries with their sizes.
func dirFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi.Size()
	}
	return out
}

// TestOutputRefusesDataAndSpecialFiles is issue 22's item 3: -o never
// replaces a graph's or a state directory's files, a FIFO, or a device
// node; each is refused with the reason, and nothing is written.
func TestOutputRefusesDataAndSpecialFiles(t *testing.T) {
	graph := emailGraph(t)
	work := t.TempDir()
	gw := filepath.Join(work, "gw")
	copyTree(t, graph, gw)
	before := treeOf(t, gw)
	train := writeTrain(t, []uint32{1, 2, 3, 4})
	state := filepath.Join(work, "st")
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", gw, "--train", train, "--fanouts", "3", "-q"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := cli(t, "advance", "--state", state); code != 0 {
		t.Fatal(e)
	}
	stBefore := treeOf(t, state)
	fifo := filepath.Join(work, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	walkArgs := func(out string) []string {
		return []string{"walk", "--graph", gw, "--all", "--length", "2", "-q", "-o", out}
	}
	sampleArgs := func(out string) []string {
		return []string{"sample", "--state", state, "--seeds", "1,2", "-o", out}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"walk over the graph's chunks", walkArgs(filepath.Join(gw, chunkfmt.ChunksFile)), "inside the graph directory", 2},
		{"walk into the graph directory", walkArgs(filepath.Join(gw, "walks.npy")), "inside the graph directory", 2},
		{"sample over an epoch's array", sampleArgs(filepath.Join(state, "epoch-0", "frontier-0.u32")), "inside the state directory", 2},
		{"sample over config.json", sampleArgs(filepath.Join(state, "config.json")), "inside the state directory", 2},
		{"walk into a FIFO", walkArgs(fifo), "FIFO", 1},
		{"sample into a FIFO", sampleArgs(fifo), "FIFO", 1},
		{"walk into a device", walkArgs(os.DevNull), "device", 1},
		{"walk into a directory", walkArgs(work), "directory", 1},
	} {
		_, e, code := cli(t, c.args...)
		if code != c.code || !strings.Contains(e, c.want) {
			t.Errorf("%s: exit %d (want %d), %q does not say %q", c.name, code, c.code, e, c.want)
		}
	}
	if got := treeOf(t, gw); !sameTree(got, before) {
		t.Fatalf("the graph directory changed: %v", treeKeys(got))
	}
	if got := treeOf(t, state); !sameTree(got, stBefore) {
		t.Fatalf("the state directory changed: %v", treeKeys(got))
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO is gone: %v %v", fi, err)
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Fatalf("%s is no longer a device: %v %v", os.DevNull, fi, err)
	}
	if got := dirFiles(t, work); len(got) != 3 { // gw, st, fifo: no temporary left
		t.Fatalf("work holds %v", got)
	}
	// A directory that merely holds a config.json or a manifest.json (a
	// user's project) is neither: -o into it is fine.
	project := filepath.Join(work, "project")
	if err := os.MkdirAll(filepath.Join(project, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "manifest.json", "features.json"} {
		if err := os.WriteFile(filepath.Join(project, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, e, code := cli(t, walkArgs(filepath.Join(project, "runs", "walks.npy"))...); code != 0 {
		t.Fatalf("walk -o into a project directory: exit %d, %s", code, e)
	}
}

const walkKillEnv = "STREAMSAMPLER_TEST_WALK_KILL"

// TestWalkKillHelper is TestWalkKilledLeavesNothing's child: it runs walk
// and dies (SIGKILL) once the output's temporary is written, before the
// commit's rename.
func TestWalkKillHelper(t *testing.T) {
	args := os.Getenv(walkKillEnv)
	if args == "" {
		return // not the child
	}
	var a []string
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatal(err)
	}
	failpoint.Enable(func(name string) error { // never restored: the process is killed
		if strings.HasPrefix(name, atomicfile.FailpointRename) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	_, e, code := cli(t, a...)
	t.Fatalf("walk was not killed: exit %d %s", code, e)
}

// TestWalkKilledLeavesNothing is issue 22's item 4: a walk killed with its
// temporary fallocated to the whole output leaves that file behind (no
// process can remove it then), and the next walk to the same output
// removes it: nothing but the output remains.
func TestWalkKilledLeavesNothing(t *testing.T) {
	graph := emailGraph(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "walks.npy")
	args, _ := json.Marshal([]string{"walk", "--graph", graph, "--all", "--length", "20", "-q", "-o", out})
	cmd := exec.Command(os.Args[0], "-test.run=^TestWalkKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), walkKillEnv+"="+string(args))
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child not killed: %v\n%s", err, b)
	}
	left := dirFiles(t, dir)
	if len(left) != 1 {
		t.Fatalf("after the kill: %v, want the one temporary", left)
	}
	for name, size := range left {
		if !strings.HasPrefix(name, ".walks.npy.tmp-") || size < 1005*21*4 {
			t.Fatalf("after the kill: %s of %d bytes, want the output's temporary", name, size)
		}
	}
	if _, e, code := cli(t, "walk", "--graph", graph, "--all", "--length", "20", "-q", "-o", out); code != 0 {
		t.Fatal(e)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for n := range dirFiles(t, dir) {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(got, []string{"walks.npy"}) {
		t.Fatalf("after the next walk: %v, want walks.npy alone", got)
	}
}
