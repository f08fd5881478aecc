package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/epochdir"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

// txnConfig is a configuration whose epochs epochtest.NewResult(t, 2, …)
// makes (seed 2, replace, fanouts [2]).
func txnConfig() Config {
	return Config{Graph: "/g", Fingerprint: chunkfmt.Fingerprint{NumNodes: 100, NumEdges: 900, ChunkSize: 4096, Chunks: 3},
		Train: "/t", TrainSet: epochdir.TrainSetOf([]uint32{1, 2}), Fanouts: []int{2}, Seed: 2, Replace: true, WorldSize: 1}
}

func epochOf(t *testing.T, e uint32) *epoch.Result {
	res := epochtest.NewResult(t, 2, 100, []int{2})
	res.Key.Epoch = e
	return res
}

func open(t *testing.T, st State) *Contents {
	t.Helper()
	c, err := st.Open()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTxnConfigFirst: a fresh directory gets config.json with its first
// epoch, and keeps nothing when no epoch commits: closed early, or the
// first commit failing at any of its steps.
func TestTxnConfigFirst(t *testing.T) {
	st := State{Dir: filepath.Join(t.TempDir(), "state")}
	tx, err := Begin(st, open(t, st), txnConfig(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := tx.NextEpoch(); n != 0 {
		t.Fatalf("NextEpoch of a fresh directory = %d", n)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.ConfigPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("closed without a commit, config.json: %v", err)
	}
	for _, step := range []string{FailpointWriteConfig, epochdir.FailpointPrefix + epochdir.StepMkdir,
		epochdir.FailpointPrefix + epochdir.StepWrite + epochdir.ManifestName, epochdir.FailpointPrefix + epochdir.StepInstalled} {
		tx, err := Begin(st, open(t, st), txnConfig(), true, nil)
		if err != nil {
			t.Fatal(err)
		}
		restore := failpoint.Enable(func(name string) error {
			if name == step {
				return syscall.ENOSPC
			}
			return nil
		})
		err = tx.Commit(epochOf(t, 0), false)
		restore()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("commit failing at %s: %v", step, err)
		}
		if err := tx.Close(); err != nil {
			t.Fatal(err)
		}
		if c := open(t, st); c.Committed || len(c.Prepared) != 0 || len(c.Leftovers) != 0 {
			t.Fatalf("commit failing at %s left %+v", step, c)
		}
	}
	tx, err = Begin(st, open(t, st), txnConfig(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for e := uint32(0); e < 2; e++ {
		if err := tx.Commit(epochOf(t, e), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(t, st)
	if !c.Committed || !slices.Equal(c.Prepared, []uint32{0, 1}) || c.Config.Seed != 2 {
		t.Fatalf("after two commits: %+v", c)
	}
	// A later transaction continues after them, and a failed commit of
	// a recorded configuration leaves the configuration alone.
	tx, err = Begin(st, c, c.Config, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if n := tx.NextEpoch(); n != 2 {
		t.Fatalf("NextEpoch after epochs 0 and 1 = %d", n)
	}
	restore := failpoint.Enable(func(name string) error {
		if name == epochdir.FailpointPrefix+epochdir.StepInstall {
			return syscall.ENOSPC
		}
		return nil
	})
	err = tx.Commit(epochOf(t, 2), false)
	restore()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if c := open(t, st); !c.Committed || !slices.Equal(c.Prepared, []uint32{0, 1}) {
		t.Fatalf("a failed commit over a recorded configuration: %+v", c)
	}
}

// TestTxnBegin: Begin holds the lock, removes leftovers, and refuses a
// directory that changed since the caller opened it.
func TestTxnBegin(t *testing.T) {
	st, cfg := committedState(t)
	opened := open(t, st)
	stale := filepath.Join(st.Dir, ".epoch-7.tmp-1")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	var removed []string
	tx, err := Begin(st, opened, cfg, false, func(l Leftover) { removed = append(removed, l.Name) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{".epoch-7.tmp-1"}) {
		t.Fatalf("removed %v", removed)
	}
	if _, err := Begin(st, opened, cfg, false, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Begin while the first holds the lock: %v", err)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(epochOf(t, 5), false); err == nil {
		t.Fatal("Commit after Close succeeded")
	}
	// Another command records a configuration between Open and Begin.
	fresh := State{Dir: filepath.Join(t.TempDir(), "state")}
	before := open(t, fresh)
	other, err := Begin(fresh, before, txnConfig(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Commit(epochOf(t, 0), false); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if _, err := Begin(fresh, before, txnConfig(), true, nil); err == nil || !strings.Contains(err.Error(), "changed by another command") {
		t.Fatalf("Begin over a directory changed since Open: %v", err)
	}
}
