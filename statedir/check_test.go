package statedir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/epochdir"
)

// committedState writes a state directory as prepare and advance leave
// it: config.json, epochs 0 and 1 with their identity, CURRENT = 0.
func committedState(t *testing.T) (State, Config) {
	t.Helper()
	st := State{Dir: filepath.Join(t.TempDir(), "state")}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Graph: "/g", Fingerprint: chunkfmt.Fingerprint{NumNodes: 100, NumEdges: 900, ChunkSize: 4096, Chunks: 3, ChunkCRCs: 0xabc},
		Train: "/t", TrainSet: epochdir.TrainSetOf([]uint32{3, 1, 2, 2}), Fanouts: []int{2}, Seed: 2, Replace: true, Rank: 0, WorldSize: 1}
	if err := st.WriteConfig(cfg); err != nil {
		t.Fatal(err)
	}
	id := cfg.Identity()
	for e := uint32(0); e < 2; e++ {
		res := epochtest.NewResult(t, 2, 100, []int{2}) // seed 2, replace
		res.Key.Epoch = e
		if err := epochdir.Write(st.EpochDir(e), res, epochdir.WriteOptions{Identity: &id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetCurrent(0); err != nil {
		t.Fatal(err)
	}
	return st, cfg
}

func TestTrainSetOf(t *testing.T) {
	a, b := epochdir.TrainSetOf([]uint32{5, 1, 3, 1}), epochdir.TrainSetOf([]uint32{1, 3, 5})
	if a != b || a.Count != 3 {
		t.Fatalf("order and duplicates change the set: %+v %+v", a, b)
	}
	if c := epochdir.TrainSetOf([]uint32{1, 3, 6}); c == a {
		t.Fatal("another set has the same identity")
	}
}

// TestStateOpenCorruptionMatrix edits every field of the state
// directory's metadata, one at a time: Open must refuse each, naming the
// file (and the field where another part shows which), and an edited
// manifest must be refused by Read too. Nothing is ever served from a
// directory whose parts disagree.
func TestStateOpenCorruptionMatrix(t *testing.T) {
	editJSON := func(file string, f func(m map[string]any)) func(t *testing.T, st State) {
		return func(t *testing.T, st State) {
			p := filepath.Join(st.Dir, file)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			f(m)
			data, _ = json.Marshal(m)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sub := func(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }
	man0 := filepath.Join("epoch-0", epochdir.ManifestName)
	man1 := filepath.Join("epoch-1", epochdir.ManifestName)
	cases := []struct {
		name    string
		mut     func(t *testing.T, st State)
		file    string // named by the error
		mention string // and this
		epoch   int    // an epoch whose epochdir.Read must fail too, or -1
	}{
		// config.json: every field.
		{"config graph", editJSON(ConfigName, func(m map[string]any) { m["graph"] = "/other" }), ConfigName, "checksum", -1},
		{"config num_nodes", editJSON(ConfigName, func(m map[string]any) { sub(m, "fingerprint")["num_nodes"] = 101 }), man0, "graph fingerprint", -1},
		{"config num_edges", editJSON(ConfigName, func(m map[string]any) { sub(m, "fingerprint")["num_edges"] = 1 }), man0, "graph fingerprint", -1},
		{"config chunk_size", editJSON(ConfigName, func(m map[string]any) { sub(m, "fingerprint")["chunk_size"] = 8192 }), man0, "graph fingerprint", -1},
		{"config chunks", editJSON(ConfigName, func(m map[string]any) { sub(m, "fingerprint")["chunks"] = 4 }), man0, "graph fingerprint", -1},
		{"config chunk_crcs", editJSON(ConfigName, func(m map[string]any) { sub(m, "fingerprint")["chunk_crcs"] = 1 }), man0, "graph fingerprint", -1},
		{"config train", editJSON(ConfigName, func(m map[string]any) { m["train"] = "/t2" }), ConfigName, "checksum", -1},
		{"config train_set count", editJSON(ConfigName, func(m map[string]any) { sub(m, "train_set")["count"] = 4 }), man0, "train_set", -1},
		{"config train_set crc", editJSON(ConfigName, func(m map[string]any) { sub(m, "train_set")["crc32c"] = 5 }), man0, "train_set", -1},
		{"config fanouts", editJSON(ConfigName, func(m map[string]any) { m["fanouts"] = []int{2, 2} }), man0, "fanouts", -1},
		{"config seed", editJSON(ConfigName, func(m map[string]any) { m["seed"] = 3 }), man0, "seed", -1},
		{"config replace", editJSON(ConfigName, func(m map[string]any) { m["replace"] = false }), man0, "replace", -1},
		{"config rank", editJSON(ConfigName, func(m map[string]any) { m["rank"] = 1; m["world_size"] = 2 }), man0, "rank", -1},
		{"config world_size", editJSON(ConfigName, func(m map[string]any) { m["world_size"] = 2 }), man0, "world_size", -1},
		{"config compress", editJSON(ConfigName, func(m map[string]any) { m["compress"] = "zstd" }), man0, "compression", -1},
		{"config edge_ids", editJSON(ConfigName, func(m map[string]any) { m["edge_ids"] = true }), man0, "edge_ids false disagrees with true", -1},
		{"config checksum", editJSON(ConfigName, func(m map[string]any) { m["checksum"] = 1 }), ConfigName, "checksum", -1},
		{"config unknown field", editJSON(ConfigName, func(m map[string]any) { m["extra"] = 1 }), ConfigName, "extra", -1},
		{"config truncated", func(t *testing.T, st State) { os.Truncate(st.ConfigPath(), 10) }, ConfigName, "not a valid configuration", -1},
		// An epoch's manifest: every field, including "epoch".
		{"manifest epoch", editJSON(man1, func(m map[string]any) { m["epoch"] = 0 }), man1, "epoch 0, but the directory is epoch-1", 1},
		{"manifest epoch renamed", func(t *testing.T, st State) {
			if err := os.Rename(st.EpochDir(1), st.EpochDir(2)); err != nil {
				t.Fatal(err)
			}
		}, filepath.Join("epoch-2", epochdir.ManifestName), "epoch 1, but the directory is epoch-2", 2},
		{"manifest seed", editJSON(man1, func(m map[string]any) { m["seed"] = 3 }), man1, "seed", 1},
		{"manifest replace", editJSON(man1, func(m map[string]any) { m["replace"] = false }), man1, "replace", 1},
		{"manifest edge_ids", editJSON(man1, func(m map[string]any) { m["edge_ids"] = true }), man1, "arrays", 1},
		{"manifest fanouts", editJSON(man1, func(m map[string]any) { m["fanouts"] = []int{3} }), man1, "", 1},
		{"manifest fingerprint", editJSON(man1, func(m map[string]any) { sub(sub(m, "identity"), "graph_fingerprint")["num_nodes"] = 7 }), man1, "graph fingerprint", 1},
		{"manifest train_set", editJSON(man1, func(m map[string]any) { sub(sub(m, "identity"), "train_set")["count"] = 9 }), man1, "train_set", 1},
		{"manifest rank", editJSON(man1, func(m map[string]any) { sub(m, "identity")["rank"] = 1; sub(m, "identity")["world_size"] = 2 }), man1, "rank", 1},
		{"manifest rank out of range", editJSON(man1, func(m map[string]any) { sub(m, "identity")["rank"] = 1 }), man1, "rank 1 of world size 1", 1},
		{"manifest world_size", editJSON(man1, func(m map[string]any) { sub(m, "identity")["world_size"] = 3 }), man1, "world_size", 1},
		{"manifest no identity", editJSON(man1, func(m map[string]any) { delete(m, "identity") }), man1, "no identity", 1},
		{"manifest checksum", editJSON(man1, func(m map[string]any) { m["checksum"] = 1 }), man1, "checksum", 1},
		{"manifest array crc", editJSON(man1, func(m map[string]any) { m["arrays"].([]any)[0].(map[string]any)["crc32c"] = 1 }), man1, "checksum", 1},
		{"manifest version", editJSON(man1, func(m map[string]any) { m["version"] = 1 }), man1, "version 1", 1},
		{"manifest truncated", func(t *testing.T, st State) { os.Truncate(filepath.Join(st.Dir, man1), 20) }, man1, "not a valid manifest", 1},
		// CURRENT.
		{"current garbage", func(t *testing.T, st State) { os.WriteFile(filepath.Join(st.Dir, CurrentName), []byte("0\n"), 0o644) }, CurrentName, "not", -1},
		{"current epoch edited", editJSON(CurrentName, func(m map[string]any) { m["epoch"] = 1 }), CurrentName, "checksum", -1},
		{"current checksum", editJSON(CurrentName, func(m map[string]any) { m["checksum"] = 1 }), CurrentName, "checksum", -1},
		{"current names a missing epoch", func(t *testing.T, st State) { st.SetCurrent(5) }, CurrentName, "epoch-5 is missing", -1},
		{"current epoch removed", func(t *testing.T, st State) { os.RemoveAll(st.EpochDir(0)) }, CurrentName, "epoch-0 is missing", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := committedState(t)
			if _, err := st.Open(); err != nil {
				t.Fatalf("intact directory refused: %v", err)
			}
			c.mut(t, st)
			_, err := st.Open()
			if !errors.Is(err, epochdir.ErrCorrupt) {
				t.Fatalf("Open: got %v, want epochdir.ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(st.Dir, c.file)) || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("Open: %q does not name %s and %q", err, c.file, c.mention)
			}
			if c.epoch >= 0 {
				if _, err := epochdir.Read(st.EpochDir(uint32(c.epoch))); !errors.Is(err, epochdir.ErrCorrupt) {
					t.Fatalf("Read accepted the edited epoch: %v", err)
				}
			}
		})
	}
}

// TestStateOpenLeftovers: what interrupted runs leave is listed, never
// taken for state, and Clean removes exactly it.
func TestStateOpenLeftovers(t *testing.T) {
	names := func(ls []Leftover) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Name)
		}
		slices.Sort(out)
		return out
	}
	listing := func(dir string) []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}

	t.Run("committed with leftovers", func(t *testing.T) {
		st, cfg := committedState(t)
		want := listing(st.Dir)
		os.Mkdir(filepath.Join(st.Dir, ".epoch-2.tmp-77"), 0o755)
		os.WriteFile(filepath.Join(st.Dir, ".config.json.tmp-5"), []byte("{"), 0o644)
		os.WriteFile(filepath.Join(st.Dir, ".CURRENT.tmp-5"), nil, 0o644)
		os.Mkdir(filepath.Join(st.Dir, "epoch-3"), 0o755) // no manifest
		os.WriteFile(filepath.Join(st.Dir, "notes.txt"), nil, 0o644)
		c, err := st.Open()
		if err != nil {
			t.Fatal(err)
		}
		if !c.Committed || !slices.Equal(c.Prepared, []uint32{0, 1}) || !c.HasCurrent || c.Current != 0 || !slices.Equal(c.Config.Fanouts, cfg.Fanouts) {
			t.Fatalf("contents %+v", c)
		}
		if got := names(c.Leftovers); !slices.Equal(got, []string{".CURRENT.tmp-5", ".config.json.tmp-5", ".epoch-2.tmp-77", "epoch-3"}) {
			t.Fatalf("leftovers %v", got)
		}
		if len(c.Orphans()) != 0 {
			t.Fatalf("orphans in a committed directory: %v", c.Orphans())
		}
		removed, err := st.Clean(c)
		if err != nil || len(removed) != 4 {
			t.Fatalf("Clean: %v %v", removed, err)
		}
		if got := listing(st.Dir); !slices.Equal(got, append(want, "notes.txt")) {
			t.Fatalf("after Clean: %v, want %v and notes.txt", got, want)
		}
	})
	t.Run("epochs older than current", func(t *testing.T) {
		st, _ := committedState(t)
		st.SetCurrent(1) // an advance killed before it pruned epoch 0
		c, err := st.Open()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Prepared, []uint32{1}) || !slices.Equal(names(c.Leftovers), []string{"epoch-0"}) {
			t.Fatalf("contents %+v", c)
		}
	})
	t.Run("config without an epoch", func(t *testing.T) {
		st, _ := committedState(t)
		os.RemoveAll(st.EpochDir(0))
		os.RemoveAll(st.EpochDir(1))
		os.Remove(filepath.Join(st.Dir, CurrentName))
		c, err := st.Open()
		if err != nil {
			t.Fatal(err)
		}
		if c.Committed || !slices.Equal(names(c.Leftovers), []string{ConfigName}) || len(c.Orphans()) != 0 {
			t.Fatalf("contents %+v", c)
		}
		if _, err := st.Clean(c); err != nil {
			t.Fatal(err)
		}
		if got := listing(st.Dir); len(got) != 0 {
			t.Fatalf("after Clean: %v", got)
		}
	})
	t.Run("orphan epochs", func(t *testing.T) {
		st, _ := committedState(t)
		os.Remove(st.ConfigPath())
		c, err := st.Open()
		if err != nil {
			t.Fatal(err)
		}
		if c.Committed || !slices.Equal(names(c.Orphans()), []string{CurrentName, "epoch-0", "epoch-1"}) {
			t.Fatalf("contents %+v", c)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		c, err := State{Dir: filepath.Join(t.TempDir(), "none")}.Open()
		if err != nil || c.Committed || len(c.Leftovers) != 0 {
			t.Fatalf("%+v %v", c, err)
		}
	})
}

func TestStateLock(t *testing.T) {
	st := State{Dir: t.TempDir()}
	unlock, err := st.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lock(); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Lock: %v, want ErrBusy", err)
	}
	unlock()
	unlock2, err := st.Lock()
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()
	if _, err := (State{Dir: filepath.Join(st.Dir, "none")}).Lock(); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("Lock of a missing directory: %v", err)
	}
}
