package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epochdir"
)

// writeGraph writes a graph of n nodes, node v linked to v+1 and to
// v+extra (mod n), so that two calls with another extra differ.
func writeGraph(t *testing.T, dir string, n uint32, extra uint32) *chunkfmt.Manifest {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	w, err := chunkfmt.NewWriter(dir, n, 4096, chunkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for v := range n {
		a, b := (v+1)%n, (v+extra)%n
		if a > b {
			a, b = b, a
		}
		if err := w.Append([]uint32{a, b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := chunkfmt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReconcile: a new directory takes the given fields with absolute
// paths and the graph's fingerprint; a committed one keeps its recorded
// fields where none are given, refuses a conflicting one
// (*ConflictError), and refuses a graph rebuilt since (ErrGraphMismatch,
// naming config.json); a new directory without the fields it needs is a
// *MissingError.
func TestReconcile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	m := writeGraph(t, filepath.Join(dir, "g"), 50, 7)
	st := State{Dir: filepath.Join(dir, "state")}
	all := func(string) bool { return true }
	given := Config{Graph: "g", Train: "train.txt", Fanouts: []int{3, 2}, Seed: 9, WorldSize: 1}

	cfg, fresh, gm, err := st.Reconcile(&Contents{}, given, all)
	if err != nil || !fresh || gm == nil {
		t.Fatalf("new directory: %v fresh %v", err, fresh)
	}
	if cfg.Graph != filepath.Join(dir, "g") || cfg.Train != filepath.Join(dir, "train.txt") || cfg.Fingerprint != m.Fingerprint() || cfg.Seed != 9 {
		t.Fatalf("new directory: %+v", cfg)
	}
	if _, _, _, err := st.Reconcile(&Contents{}, Config{Graph: "g"}, func(f string) bool { return f == FieldGraph }); !errors.As(err, new(*MissingError)) || !errors.Is(err, epoch.ErrConfig) {
		t.Fatalf("new directory without train and fanouts: %v", err)
	}

	committed := &Contents{Config: cfg, Committed: true}
	got, fresh, _, err := st.Reconcile(committed, Config{}, func(string) bool { return false })
	if err != nil || fresh || got.Graph != cfg.Graph || got.Seed != 9 {
		t.Fatalf("recorded directory, nothing given: %+v fresh %v %v", got, fresh, err)
	}
	var conflict *ConflictError
	_, _, _, err = st.Reconcile(committed, Config{Seed: 10}, func(f string) bool { return f == FieldSeed })
	if !errors.As(err, &conflict) || conflict.Field != FieldSeed || conflict.Given != uint64(10) || conflict.Recorded != uint64(9) {
		t.Fatalf("conflicting seed: %v", err)
	}
	writeGraph(t, filepath.Join(dir, "g"), 50, 11)
	if _, _, _, err := st.Reconcile(committed, Config{}, func(string) bool { return false }); !errors.Is(err, ErrGraphMismatch) || !strings.Contains(err.Error(), st.ConfigPath()) {
		t.Fatalf("rebuilt graph: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReadGraph(cfg); err == nil || !strings.Contains(err.Error(), "graph of state "+st.Dir) {
		t.Fatalf("missing graph: %v", err)
	}
}

// TestBindTrainSet: a new configuration records the training nodes'
// identity; a recorded one accepts the same set in any order and refuses
// another, naming the file.
func TestBindTrainSet(t *testing.T) {
	cfg := Config{Train: "/t/train.txt"}
	if err := cfg.BindTrainSet([]uint32{4, 2, 9}, true); err != nil || cfg.TrainSet != epochdir.TrainSetOf([]uint32{2, 4, 9}) {
		t.Fatalf("fresh: %v %+v", err, cfg.TrainSet)
	}
	if err := cfg.BindTrainSet([]uint32{9, 4, 2}, false); err != nil {
		t.Fatalf("same set: %v", err)
	}
	if err := cfg.BindTrainSet([]uint32{9, 4}, false); err == nil || !strings.Contains(err.Error(), "/t/train.txt") || !strings.Contains(err.Error(), "changed since the first prepare") {
		t.Fatalf("another set: %v", err)
	}
}

// TestOpenLockedAndInspect: both remove what interrupted runs left (an
// epoch directory's temporary), reporting it; Inspect of a directory
// another holder has locked removes nothing and returns it as kept;
// OpenLocked then fails with ErrBusy. EpochBytes sums an epoch's files.
func TestOpenLockedAndInspect(t *testing.T) {
	st, _ := committedState(t)
	leave := func() {
		if err := os.Mkdir(filepath.Join(st.Dir, "."+epochdir.DirName(5)+".tmp-1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	leave()
	var reported []Leftover
	c, unlock, err := st.OpenLocked(func(l Leftover) { reported = append(reported, l) })
	if err != nil {
		t.Fatal(err)
	}
	if len(reported) != 1 || len(c.Leftovers) != 0 || !c.Committed {
		t.Fatalf("OpenLocked: reported %v, leftovers %v", reported, c.Leftovers)
	}
	leave()
	if c, removed, kept, err := st.Inspect(); err != nil || len(removed) != 0 || len(kept) != 1 || !c.Committed {
		t.Fatalf("Inspect while locked: removed %v kept %v %v", removed, kept, err)
	}
	if _, _, err := st.OpenLocked(nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("OpenLocked while locked: %v", err)
	}
	unlock()
	if c, removed, kept, err := st.Inspect(); err != nil || len(removed) != 1 || len(kept) != 0 || len(c.Leftovers) != 0 {
		t.Fatalf("Inspect: removed %v kept %v %v", removed, kept, err)
	}
	if n, err := st.EpochBytes(0); err != nil || n <= 0 {
		t.Fatalf("EpochBytes: %d %v", n, err)
	}
}
