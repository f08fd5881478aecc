package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/failpoint"
	"github.com/streamsampler/streamsampler/statedir"
)

// treeOf maps every file under dir (relative path) to a hash of its
// content; directories appear with "/". A missing dir is empty.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(h[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func treeKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// copyTree copies the state directory src to dst (files and dirs only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// prepareScenarios are the two kinds of prepare: the first one into a
// new directory, and a later one into a committed directory.
func prepareScenarios(t *testing.T) (graph, train string, scen []struct {
	name     string
	old, new string // reference state directories before and after
	args     []string
}) {
	t.Helper()
	graph, _ = testGraph(t, 2000, 5, 4096)
	train = writeTrain(t, []uint32{1, 2, 3, 50, 700, 1999})
	first := []string{"--graph", graph, "--train", train, "--fanouts", "4,3", "--seed", "9", "-q"}
	base := t.TempDir()
	empty := filepath.Join(base, "empty")
	one := filepath.Join(base, "one")
	if _, e, code := cli(t, append([]string{"prepare", "--state", one}, first...)...); code != 0 {
		t.Fatal(e)
	}
	two := filepath.Join(base, "two")
	copyTree(t, one, two)
	if _, e, code := cli(t, "prepare", "--state", two, "-q"); code != 0 {
		t.Fatal(e)
	}
	scen = append(scen, struct {
		name     string
		old, new string
		args     []string
	}{"first", empty, one, first}, struct {
		name     string
		old, new string
		args     []string
	}{"second", one, two, []string{"-q"}})
	return graph, train, scen
}

const (
	killStepEnv = "STREAMSAMPLER_TEST_KILL_AT"
	killArgsEnv = "STREAMSAMPLER_TEST_KILL_ARGS"
)

// TestPrepareKillHelper is the child process of TestPrepareKilledAtEveryStep:
// it runs prepare and exits at once, running no deferred clean-up, when
// prepare reaches the named step: a kill at exactly that point.
func TestPrepareKillHelper(t *testing.T) {
	step := os.Getenv(killStepEnv)
	if step == "" {
		return // not the child: nothing to do (and nothing skipped to report)
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(killArgsEnv)), &args); err != nil {
		t.Fatal(err)
	}
	failpoint.Enable(func(s string) error { // never restored: the process exits at the step
		if s == step {
			os.Exit(137)
		}
		return nil
	})
	_, e, code := cli(t, args...)
	t.Fatalf("prepare was not killed at %q: exit %d %s", step, code, e)
}

// TestPrepareKilledAtEveryStep kills prepare (a child process) at every
// step, first and later prepares alike: the directory must then be the
// old state or the new one, info must remove exactly what the kill left
// (so that the tree equals the old or the new one byte for byte), and a
// prepare run afterwards must give the uninterrupted result.
func TestPrepareKilledAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process per step")
	}
	_, _, scen := prepareScenarios(t)
	for _, sc := range scen {
		oldTree, newTree := treeOf(t, sc.old), treeOf(t, sc.new)
		var steps []string
		restore := failpoint.Enable(func(s string) error {
			// prepare's own steps; atomicfile's system calls, named by
			// their temporary paths, are failed in its own tests.
			if !strings.HasPrefix(s, atomicfile.FailpointFsync) && !strings.HasPrefix(s, atomicfile.FailpointRename) && !strings.HasPrefix(s, atomicfile.FailpointExchange) {
				steps = append(steps, s)
			}
			return nil
		})
		probe := filepath.Join(t.TempDir(), "s")
		copyTree(t, sc.old, probe)
		_, e, code := cli(t, append([]string{"prepare", "--state", probe}, sc.args...)...)
		restore()
		if code != 0 || !sameTree(treeOf(t, probe), newTree) {
			t.Fatalf("%s: an uninterrupted prepare differs from the reference: %d %s", sc.name, code, e)
		}
		if !slices.Contains(steps, statedir.FailpointWriteConfig) == (sc.name == "first") || !slices.Contains(steps, epochdir.FailpointPrefix+epochdir.StepInstall) {
			t.Fatalf("%s: steps %v", sc.name, steps)
		}
		for _, step := range steps {
			t.Run(sc.name+"/"+step, func(t *testing.T) {
				state := filepath.Join(t.TempDir(), "s")
				copyTree(t, sc.old, state)
				args, _ := json.Marshal(append([]string{"prepare", "--state", state}, sc.args...))
				cmd := exec.Command(os.Args[0], "-test.run=^TestPrepareKillHelper$", "-test.count=1")
				cmd.Env = append(os.Environ(), killStepEnv+"="+step, killArgsEnv+"="+string(args))
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 137 {
					t.Fatalf("child not killed at %s: %v\n%s", step, err, out)
				}
				// What every command sees: the old state or the new one.
				c, err := statedir.State{Dir: state}.Open()
				if err != nil {
					t.Fatalf("killed at %s: %v", step, err)
				}
				oldC, _ := statedir.State{Dir: sc.old}.Open()
				newC, _ := statedir.State{Dir: sc.new}.Open()
				isOld := c.Committed == oldC.Committed && slices.Equal(c.Prepared, oldC.Prepared)
				isNew := c.Committed == newC.Committed && slices.Equal(c.Prepared, newC.Prepared)
				if !isOld && !isNew {
					t.Fatalf("killed at %s: committed %v, epochs %v: neither old nor new", step, c.Committed, c.Prepared)
				}
				// info removes the leftovers; the tree is then exactly one
				// of the two.
				cli(t, "info", "--state", state)
				got := treeOf(t, state)
				if !sameTree(got, oldTree) && !sameTree(got, newTree) {
					t.Fatalf("killed at %s, after info: %v\nold %v\nnew %v", step, treeKeys(got), treeKeys(oldTree), treeKeys(newTree))
				}
				if sameTree(got, oldTree) {
					// Not committed: the prepare runs again to the same end.
					if _, e, code := cli(t, append([]string{"prepare", "--state", state}, sc.args...)...); code != 0 {
						t.Fatalf("prepare after the kill at %s: %s", step, e)
					}
					if got := treeOf(t, state); !sameTree(got, newTree) {
						t.Fatalf("prepare after the kill at %s gave %v", step, treeKeys(got))
					}
				}
			})
		}
	}
}

// TestPrepareFullDiskAtEveryWrite fails each write of prepare with ENOSPC
// (and the sync after the commit): the exit status must match the disk.
// A failed prepare leaves the tree exactly as it was, with no leftovers.
func TestPrepareFullDiskAtEveryWrite(t *testing.T) {
	_, _, scen := prepareScenarios(t)
	restore := failpoint.Enable(func(string) error { return nil })
	defer restore()
	for _, sc := range scen {
		oldTree, newTree := treeOf(t, sc.old), treeOf(t, sc.new)
		var writes []string
		failpoint.Enable(func(s string) error {
			if strings.HasPrefix(s, epochdir.FailpointPrefix+epochdir.StepWrite) || s == epochdir.FailpointPrefix+epochdir.StepInstalled {
				writes = append(writes, s)
			}
			return nil
		})
		probe := filepath.Join(t.TempDir(), "s")
		copyTree(t, sc.old, probe)
		if _, e, code := cli(t, append([]string{"prepare", "--state", probe}, sc.args...)...); code != 0 {
			t.Fatal(e)
		}
		if len(writes) < 6 {
			t.Fatalf("%s: writes %v", sc.name, writes)
		}
		for _, w := range writes {
			state := filepath.Join(t.TempDir(), "s")
			copyTree(t, sc.old, state)
			failpoint.Enable(func(s string) error {
				if s == w {
					return syscall.ENOSPC
				}
				return nil
			})
			_, e, code := cli(t, append([]string{"prepare", "--state", state}, sc.args...)...)
			got := treeOf(t, state)
			switch {
			case code == 0 && sameTree(got, newTree):
			case code != 0 && sameTree(got, oldTree):
				if !strings.Contains(e, "no space left") {
					t.Fatalf("%s, full at %s: %q does not say why", sc.name, w, e)
				}
			default:
				t.Fatalf("%s, full at %s: exit %d (%s) with %v on disk\nold %v\nnew %v", sc.name, w, code, e, treeKeys(got), treeKeys(oldTree), treeKeys(newTree))
			}
		}
	}
}

// TestPrepareOrphanEpoch is finding 1: an epoch without config.json (what
// an older build's prepare left when killed between the two) must never
// be adopted by a prepare of another graph, nor served; info removes it.
func TestPrepareOrphanEpoch(t *testing.T) {
	graphA, _ := testGraph(t, 2000, 5, 4096)
	graphB, _ := testGraph(t, 2500, 4, 4096)
	train := writeTrain(t, []uint32{1, 2, 3, 50, 700, 1999})
	state := filepath.Join(t.TempDir(), "s")
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graphA, "--train", train, "--fanouts", "4,3", "-q"); code != 0 {
		t.Fatal(e)
	}
	if err := os.Remove(filepath.Join(state, statedir.ConfigName)); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, state)
	_, e, code := cli(t, "prepare", "--state", state, "--graph", graphB, "--train", train, "--fanouts", "2", "-q")
	if code != 1 || !strings.Contains(e, "epoch-0") || !strings.Contains(e, "not adopted") {
		t.Fatalf("prepare over an orphan epoch: exit %d %s", code, e)
	}
	if !sameTree(treeOf(t, state), before) {
		t.Fatal("a refused prepare changed the directory")
	}
	if _, e, code := cli(t, "run", "--state", state, "--graph", graphB, "--train", train, "--fanouts", "2", "--batch-size", "2", "--epochs", "1"); code != 1 || !strings.Contains(e, "not adopted") {
		t.Fatalf("run --state over an orphan epoch: exit %d %s", code, e)
	}
	if _, e, code := cli(t, "sample", "--state", state, "--seeds", "1"); code != 1 || !strings.Contains(e, "not a state directory") {
		t.Fatalf("sample of an orphan epoch: exit %d %s", code, e)
	}
	_, e, code = cli(t, "info", "--state", state)
	if code != 1 || !strings.Contains(e, "removed "+filepath.Join(state, "epoch-0")) {
		t.Fatalf("info: exit %d %s", code, e)
	}
	if got := treeOf(t, state); len(got) != 0 {
		t.Fatalf("info left %v", treeKeys(got))
	}
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graphB, "--train", train, "--fanouts", "2", "-q"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := cli(t, "info", "--state", state)
	if code != 0 || !strings.Contains(out, "2500 nodes") || !strings.Contains(out, "check: ok") {
		t.Fatalf("info: %d %s %s", code, out, e)
	}
}

// TestCommandsRefuseInconsistentState: an edited part of a state
// directory is refused by every command that opens it, with an error
// naming the file, and never yields exit 0.
func TestCommandsRefuseInconsistentState(t *testing.T) {
	graph, _ := testGraph(t, 2000, 5, 4096)
	train := writeTrain(t, []uint32{1, 2, 3, 50, 700, 1999})
	base := filepath.Join(t.TempDir(), "base")
	flags := []string{"--graph", graph, "--train", train, "--fanouts", "4,3", "--seed", "9"}
	if _, e, code := cli(t, append([]string{"prepare", "--state", base, "-q"}, flags...)...); code != 0 {
		t.Fatal(e)
	}
	for _, args := range [][]string{{"prepare", "--state", base, "-q"}, {"advance", "--state", base}} {
		if _, e, code := cli(t, args...); code != 0 {
			t.Fatal(e)
		}
	}
	edit := func(file string, f func(m map[string]any)) func(t *testing.T, state string) {
		return func(t *testing.T, state string) {
			p := filepath.Join(state, file)
			data, _ := os.ReadFile(p)
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			f(m)
			data, _ = json.Marshal(m)
			os.WriteFile(p, data, 0o644)
		}
	}
	man1 := filepath.Join("epoch-1", epochdir.ManifestName)
	for _, c := range []struct {
		name, file string
		mut        func(t *testing.T, state string)
	}{
		{"config fanouts", "epoch-0", edit(statedir.ConfigName, func(m map[string]any) { m["fanouts"] = []int{4} })},
		{"config seed", "epoch-0", edit(statedir.ConfigName, func(m map[string]any) { m["seed"] = 10 })},
		{"config replace", "epoch-0", edit(statedir.ConfigName, func(m map[string]any) { m["replace"] = true })},
		{"config fingerprint", "epoch-0", edit(statedir.ConfigName, func(m map[string]any) { m["fingerprint"].(map[string]any)["chunk_crcs"] = 1 })},
		{"manifest epoch", man1, edit(man1, func(m map[string]any) { m["epoch"] = 2 })},
		{"manifest seed", man1, edit(man1, func(m map[string]any) { m["seed"] = 10 })},
		{"CURRENT", statedir.CurrentName, edit(statedir.CurrentName, func(m map[string]any) { m["epoch"] = 1 })},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "s")
			copyTree(t, base, state)
			c.mut(t, state)
			for _, args := range [][]string{
				{"info", "--state", state},
				{"sample", "--state", state, "--seeds", "1"},
				{"prepare", "--state", state, "-q"},
				{"advance", "--state", state},
				append([]string{"run", "--state", state, "--batch-size", "2", "--epochs", "1"}, flags...),
			} {
				_, e, code := cli(t, args...)
				if code != 1 || !strings.Contains(e, filepath.Join(state, c.file)) {
					t.Fatalf("%s: exit %d, want 1 naming %s: %s", args[0], code, c.file, e)
				}
			}
		})
	}
}

// TestPrepareTrainFileChanged: a training file edited between two
// prepares is refused, naming the file.
func TestPrepareTrainFileChanged(t *testing.T) {
	graph, _ := testGraph(t, 2000, 5, 4096)
	train := writeTrain(t, []uint32{1, 2, 3, 50})
	state := filepath.Join(t.TempDir(), "s")
	if _, e, code := cli(t, "prepare", "--state", state, "--graph", graph, "--train", train, "--fanouts", "3", "-q"); code != 0 {
		t.Fatal(e)
	}
	if err := os.WriteFile(train, []byte("1\n2\n3\n51\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, code := cli(t, "prepare", "--state", state, "-q"); code != 1 || !strings.Contains(e, train) || !strings.Contains(e, "changed") {
		t.Fatalf("changed training file: exit %d %s", code, e)
	}
}
