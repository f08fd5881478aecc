package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/epochdir"
)

func TestStateAdvance(t *testing.T) {
	st := State{Dir: filepath.Join(t.TempDir(), "state")}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.Current(); ok || err != nil {
		t.Fatalf("fresh state has a current epoch: %v %v", ok, err)
	}
	if _, err := st.Advance(); !errors.Is(err, ErrNotPrepared) {
		t.Fatalf("Advance with nothing prepared: %v", err)
	}
	var res *epoch.Result
	for _, e := range []uint32{3, 4, 6} {
		// Write refuses to file an epoch under another epoch's name.
		res = epochtest.NewResult(t, 2, 100, []int{2})
		res.Key.Epoch = e
		if err := epochdir.Write(st.EpochDir(e), res, epochdir.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Noise that Prepared must ignore: an incomplete dir, a temp dir, odd names.
	os.Mkdir(filepath.Join(st.Dir, "epoch-5"), 0o755)
	os.Mkdir(filepath.Join(st.Dir, ".epoch-7.tmp-123"), 0o755)
	os.Mkdir(filepath.Join(st.Dir, ".epoch-2.tmp-9"), 0o755)
	os.Mkdir(filepath.Join(st.Dir, "epoch-07"), 0o755)
	os.WriteFile(filepath.Join(st.Dir, "epoch-8"), nil, 0o644)
	if p, _ := st.Prepared(); !slices.Equal(p, []uint32{3, 4, 6}) {
		t.Fatalf("Prepared = %v", p)
	}
	// No current yet: the oldest prepared becomes current.
	if n, err := st.Advance(); err != nil || n != 3 {
		t.Fatalf("Advance = %d %v, want 3", n, err)
	}
	if n, ok, _ := st.Current(); !ok || n != 3 {
		t.Fatalf("Current = %d %v", n, ok)
	}
	if n, err := st.Advance(); err != nil || n != 4 {
		t.Fatalf("Advance = %d %v, want 4", n, err)
	}
	if p, _ := st.Prepared(); !slices.Equal(p, []uint32{4, 6}) {
		t.Fatalf("epoch 3 not pruned: %v", p)
	}
	if _, err := os.Stat(filepath.Join(st.Dir, ".epoch-2.tmp-9")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("stale temp dir of an old epoch survived")
	}
	if _, err := os.Stat(filepath.Join(st.Dir, ".epoch-7.tmp-123")); err != nil {
		t.Fatal("temp dir of a future epoch was removed")
	}
	// Skips the incomplete epoch 5.
	if n, err := st.Advance(); err != nil || n != 6 {
		t.Fatalf("Advance = %d %v, want 6", n, err)
	}
	if _, err := os.Stat(filepath.Join(st.Dir, "epoch-5")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("incomplete older epoch dir survived pruning")
	}
	if _, err := st.Advance(); !errors.Is(err, ErrNotPrepared) {
		t.Fatalf("Advance past the newest: %v", err)
	}
	if n, ok, _ := st.Current(); !ok || n != 6 {
		t.Fatalf("failed Advance changed CURRENT to %d", n)
	}
	if got, err := epochdir.Read(st.EpochDir(6)); err != nil || !epochtest.EqualResult(got, res) {
		t.Fatalf("current epoch unreadable: %v", err)
	}
	os.WriteFile(filepath.Join(st.Dir, CurrentName), []byte("x1\n"), 0o644)
	if _, _, err := st.Current(); !errors.Is(err, epochdir.ErrCorrupt) {
		t.Fatalf("bad CURRENT: %v", err)
	}
}

func TestStateConfig(t *testing.T) {
	st := State{Dir: t.TempDir()}
	if _, err := readConfig(st.ConfigPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing config: %v", err)
	}
	want := Config{Graph: "g", Fanouts: []int{15, 10}, Seed: 1<<63 + 5, WorldSize: 1}
	if err := st.WriteConfig(want); err != nil {
		t.Fatal(err)
	}
	got, err := readConfig(st.ConfigPath())
	if err != nil || got.Graph != want.Graph || got.Seed != want.Seed || !slices.Equal(got.Fanouts, want.Fanouts) {
		t.Fatalf("config round trip: %+v %v", got, err)
	}
	if got.Checksum == 0 || got.checksum() != got.Checksum {
		t.Fatalf("config written without a valid checksum: %#x, content %#x", got.Checksum, got.checksum())
	}
	os.WriteFile(filepath.Join(st.Dir, ConfigName), []byte("{"), 0o644)
	if _, err := readConfig(st.ConfigPath()); err == nil {
		t.Fatal("malformed config accepted")
	}
	ents, _ := os.ReadDir(st.Dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}
