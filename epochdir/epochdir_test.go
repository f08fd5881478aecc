package epochdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/epoch/epochtest"
	"github.com/streamsampler/streamsampler/internal/failpoint"
)

func TestWriteReadRoundTrip(t *testing.T) {
	for _, comp := range []string{"", "zstd"} {
		for _, fanouts := range [][]int{nil, {3}, {5, 4, 2}} {
			res := epochtest.NewResult(t, uint64(len(fanouts)), 500, fanouts)
			dir := filepath.Join(t.TempDir(), "ep")
			if err := Write(dir, res, WriteOptions{Compress: comp}); err != nil {
				t.Fatal(err)
			}
			got, err := Read(dir)
			if err != nil {
				t.Fatalf("%q %v: %v", comp, fanouts, err)
			}
			if !epochtest.EqualResult(got, res) {
				t.Fatalf("%q %v: round trip differs", comp, fanouts)
			}
			if err := Write(dir, res, WriteOptions{Compress: comp}); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("second write without Overwrite: %v", err)
			}
			other := epochtest.NewResult(t, 9, 300, []int{2})
			if err := Write(dir, other, WriteOptions{Compress: comp, Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			if got, err := Read(dir); err != nil || !epochtest.EqualResult(got, other) {
				t.Fatalf("overwrite: %v", err)
			}
			ents, _ := os.ReadDir(filepath.Dir(dir))
			if len(ents) != 1 {
				t.Fatalf("leftovers beside the epoch dir: %v", ents)
			}
		}
	}
	if err := Write(filepath.Join(t.TempDir(), "x"), epochtest.NewResult(t, 1, 50, []int{2}), WriteOptions{Compress: "gzip"}); err == nil {
		t.Fatal("unknown compression accepted")
	}
}

func TestReadCorruption(t *testing.T) {
	res := epochtest.NewResult(t, 3, 400, []int{4, 3})
	type corrupt func(t *testing.T, dir string)
	editManifest := editEpochManifest
	cases := []struct {
		name     string
		compress string
		mut      corrupt
		mention  string
	}{
		{"missing manifest", "", func(t *testing.T, d string) { os.Remove(filepath.Join(d, ManifestName)) }, ManifestName},
		{"missing array", "", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "samples-1.i32")) }, "samples-1.i32"},
		{"missing zstd array", "zstd", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "frontier-2.u32.zst")) }, "frontier-2.u32.zst"},
		{"truncated", "", func(t *testing.T, d string) {
			p := filepath.Join(d, "frontier-1.u32")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-4)
		}, "frontier-1.u32"},
		{"extended", "", func(t *testing.T, d string) {
			f, _ := os.OpenFile(filepath.Join(d, "samples-0.i32"), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{1, 2, 3, 4})
			f.Close()
		}, "samples-0.i32"},
		{"bit flip", "", func(t *testing.T, d string) { flipByte(t, filepath.Join(d, "samples-0.i32"), 5) }, "CRC"},
		{"bit flip zstd", "zstd", func(t *testing.T, d string) { flipByte(t, filepath.Join(d, "samples-1.i32.zst"), 20) }, "samples-1.i32.zst"},
		{"truncated zstd", "zstd", func(t *testing.T, d string) {
			p := filepath.Join(d, "frontier-0.u32.zst")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()/2)
		}, "frontier-0.u32.zst"},
		{"not json", "", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, ManifestName), []byte("{\"format\":"), 0o644)
		}, ManifestName},
		{"trailing data", "", func(t *testing.T, d string) {
			p := filepath.Join(d, ManifestName)
			data, _ := os.ReadFile(p)
			os.WriteFile(p, append(data, []byte("{}")...), 0o644)
		}, "trailing"},
		{"unknown field", "", editManifest(func(m map[string]any) { m["extra"] = 1 }), "extra"},
		{"version", "", editManifest(func(m map[string]any) { m["version"] = FormatVersion + 1 }), fmt.Sprintf("version %d", FormatVersion+1)},
		{"format", "", editManifest(func(m map[string]any) { m["format"] = "x" }), "format"},
		{"fanout", "", editManifest(func(m map[string]any) { m["fanouts"] = []int{4, 0} }), "fanout 0"},
		{"layer count", "", editManifest(func(m map[string]any) { m["fanouts"] = []int{4} }), "arrays"},
		{"length", "", editManifest(func(m map[string]any) { array(m, 4)["length"] = 12345 }), "frontier-2.u32"},
		{"samples length", "", editManifest(func(m map[string]any) { array(m, 1)["length"] = 3 }), "samples-0"},
		{"crc", "", editManifest(func(m map[string]any) { array(m, 2)["crc32c"] = 7 }), "frontier-1.u32"},
		{"dtype", "", editManifest(func(m map[string]any) { array(m, 0)["dtype"] = "int64" }), "dtype"},
		{"path escape", "", editManifest(func(m map[string]any) { array(m, 0)["file"] = "../frontier-0.u32" }), "file"},
		{"compression", "", editManifest(func(m map[string]any) { array(m, 0)["compression"] = "zstd" }), "frontier-0"},
		{"name", "", editManifest(func(m map[string]any) { array(m, 3)["name"] = "samples-7" }), "samples-7"},
		{"fanout disagrees with samples length", "", editManifest(func(m map[string]any) { m["fanouts"] = []int{4, 6} }), "samples-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "epoch-4") // res is epoch 4
			if err := Write(dir, res, WriteOptions{Compress: c.compress}); err != nil {
				t.Fatal(err)
			}
			c.mut(t, dir)
			_, err := Read(dir)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("error %q does not mention %q", err, c.mention)
			}
		})
	}
	// Arrays with valid checksums that break the invariants: an unsorted
	// frontier.
	bad := epochtest.NewResult(t, 3, 400, []int{4, 3})
	bad.Layers[1].Frontier = append([]uint32(nil), bad.Layers[1].Frontier...)
	bad.Layers[1].Frontier[0], bad.Layers[1].Frontier[1] = bad.Layers[1].Frontier[1], bad.Layers[1].Frontier[0]
	dir := filepath.Join(t.TempDir(), "epoch-4")
	if err := Write(dir, bad, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrCorrupt) || !errors.Is(err, epoch.ErrInvalid) || !strings.Contains(err.Error(), "layer 1 frontier") {
		t.Fatalf("unsorted frontier: %v", err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "nothing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
}

// Edge ids round-trip (raw and zstd), one edges-<l>.i64 per layer named in
// the manifest; an epoch without them writes the manifest it always did.
func TestWriteReadEdgeIDs(t *testing.T) {
	for _, comp := range []string{"", "zstd"} {
		for _, fanouts := range [][]int{{3}, {5, 4, 2}} {
			res := epochtest.WithEdgeIDs(epochtest.NewResult(t, uint64(len(fanouts)), 500, fanouts))
			for l := range res.Layers { // ids above 2^32: all 8 bytes matter
				for i, e := range res.Layers[l].EdgeIDs {
					if e >= 0 {
						res.Layers[l].EdgeIDs[i] = e + 5<<40
					}
				}
			}
			dir := filepath.Join(t.TempDir(), "ep")
			if err := Write(dir, res, WriteOptions{Compress: comp}); err != nil {
				t.Fatal(err)
			}
			got, err := Read(dir)
			if err != nil {
				t.Fatalf("%q %v: %v", comp, fanouts, err)
			}
			if !epochtest.EqualResult(got, res) {
				t.Fatalf("%q %v: round trip differs", comp, fanouts)
			}
			suffix := map[string]string{"": "", "zstd": ".zst"}[comp]
			for l := range fanouts {
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("edges-%d.i64%s", l, suffix))); err != nil {
					t.Fatal(err)
				}
			}
			data, _ := os.ReadFile(filepath.Join(dir, ManifestName))
			if !strings.Contains(string(data), `"edge_ids": true`) {
				t.Fatalf("manifest does not say edge_ids: %s", data)
			}
		}
	}
	// Without edge ids the manifest has no edge_ids field and no edges files.
	dir := filepath.Join(t.TempDir(), "plain")
	if err := Write(dir, epochtest.NewResult(t, 1, 100, []int{2}), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	if strings.Contains(string(data), "edge_ids") {
		t.Fatalf("manifest of an epoch without edge ids mentions them: %s", data)
	}
	if got, err := Read(dir); err != nil || got.Layers[0].EdgeIDs != nil {
		t.Fatalf("epoch without edge ids read back with %v, %v", got.Layers[0].EdgeIDs, err)
	}
	// A result whose layers disagree is not written.
	bad := epochtest.WithEdgeIDs(epochtest.NewResult(t, 2, 100, []int{2, 2}))
	bad.Layers[1].EdgeIDs = nil
	if err := Write(filepath.Join(t.TempDir(), "bad"), bad, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "layer 1") {
		t.Fatalf("write of edge ids in one layer of two: %v", err)
	}
}

func TestReadEdgeIDsCorruption(t *testing.T) {
	res := epochtest.WithEdgeIDs(epochtest.NewResult(t, 3, 400, []int{4, 3}))
	edit := editEpochManifest
	for _, c := range []struct {
		name, compress string
		mut            func(t *testing.T, dir string)
		mention        string
	}{
		{"missing", "", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "edges-1.i64")) }, "edges-1.i64"},
		{"bit flip", "", func(t *testing.T, d string) { flipByte(t, filepath.Join(d, "edges-0.i64"), 13) }, "edges-0.i64"},
		{"bit flip zstd", "zstd", func(t *testing.T, d string) { flipByte(t, filepath.Join(d, "edges-1.i64.zst"), 20) }, "edges-1.i64.zst"},
		{"truncated", "", func(t *testing.T, d string) {
			p := filepath.Join(d, "edges-1.i64")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-8)
		}, "edges-1.i64"},
		{"flag dropped", "", edit(func(m map[string]any) { delete(m, "edge_ids") }), "arrays"},
		{"length", "", edit(func(m map[string]any) { array(m, 5)["length"] = 3 }), "edges-0"},
		{"dtype", "", edit(func(m map[string]any) { array(m, 6)["dtype"] = "int32" }), "dtype"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "epoch-4")
			if err := Write(dir, res, WriteOptions{Compress: c.compress}); err != nil {
				t.Fatal(err)
			}
			c.mut(t, dir)
			_, err := Read(dir)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("got %v, want ErrCorrupt mentioning %q", err, c.mention)
			}
		})
	}
	// Edge ids with valid checksums that break the invariants: an id at an
	// empty slot.
	bad := epochtest.WithEdgeIDs(epochtest.NewResult(t, 3, 400, []int{4, 3}))
	i := slices.Index(bad.Layers[1].Samples, -1)
	if i < 0 {
		t.Fatal("no empty slot in layer 1")
	}
	bad.Layers[1].EdgeIDs[i] = 9
	dir := filepath.Join(t.TempDir(), "epoch-4")
	if err := Write(dir, bad, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrCorrupt) || !errors.Is(err, epoch.ErrInvalid) || !strings.Contains(err.Error(), "layer 1 row") {
		t.Fatalf("edge id at an empty slot: %v", err)
	}
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[at%int64(len(data))] ^= 0x10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadManifest feeds arbitrary manifests beside valid arrays (raw and
// compressed): Read must not panic, must wrap ErrCorrupt on failure, and
// whatever it accepts must be a valid Result.
func FuzzReadManifest(f *testing.F) {
	res := epochtest.NewResult(f, 5, 60, []int{3, 2})
	src := f.TempDir()
	for _, comp := range []string{"", "zstd"} {
		d := filepath.Join(src, "c"+comp)
		if err := Write(d, res, WriteOptions{Compress: comp}); err != nil {
			f.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(d, ManifestName))
		f.Add(data)
	}
	// One working directory per fuzzing process holds both the raw and the
	// compressed arrays; each input only replaces the manifest.
	dir := filepath.Join(src, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	for _, sub := range []string{"c", "czstd"} {
		ents, _ := os.ReadDir(filepath.Join(src, sub))
		for _, e := range ents {
			if e.Name() == ManifestName {
				continue
			}
			data, _ := os.ReadFile(filepath.Join(src, sub, e.Name()))
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, manifest []byte) {
		if err := os.WriteFile(filepath.Join(dir, ManifestName), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Read(dir)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not wrapping ErrCorrupt: %v", err)
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("Read accepted an invalid result: %v", err)
		}
	})
}

// editEpochManifest returns a corruption that rewrites an epoch
// directory's manifest through f.
func editEpochManifest(f func(m map[string]any)) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, ManifestName)
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

// array is the manifest's i-th array entry.
func array(m map[string]any, i int) map[string]any { return m["arrays"].([]any)[i].(map[string]any) }

// TestWriteFaultAtEveryStep fails Write at each of its steps, as a full
// disk would: every failure, including one after the rename (syncing the
// parent), leaves the parent directory as it was.
func TestWriteFaultAtEveryStep(t *testing.T) {
	res := epochtest.NewResult(t, 3, 300, []int{3, 2})
	for _, comp := range []string{"", "zstd"} {
		var steps []string
		dir := filepath.Join(t.TempDir(), "epoch-4")
		restore := failpoint.Enable(func(s string) error {
			// Write's own steps (atomicfile's calls under them are
			// named by random temporary paths, and failed in its tests).
			if step, ok := strings.CutPrefix(s, FailpointPrefix); ok {
				steps = append(steps, step)
			}
			return nil
		})
		err := Write(dir, res, WriteOptions{Compress: comp})
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if steps[0] != StepMkdir || steps[len(steps)-2] != StepInstall || steps[len(steps)-1] != StepInstalled || len(steps) != 3+6 {
			t.Fatalf("steps %v", steps)
		}
		for i, step := range steps {
			parent := t.TempDir()
			dir := filepath.Join(parent, "epoch-4")
			restore := failpoint.Enable(func(s string) error {
				if s == FailpointPrefix+step {
					return syscall.ENOSPC
				}
				return nil
			})
			err := Write(dir, res, WriteOptions{Compress: comp})
			restore()
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("%q step %d (%s): %v", comp, i, step, err)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Fatalf("%q: failing at %s left %v", comp, step, ents[0].Name())
			}
		}
	}
}

func TestWriteRefusesMisnamedEpoch(t *testing.T) {
	res := epochtest.NewResult(t, 3, 100, []int{2}) // epoch 4
	parent := t.TempDir()
	if err := Write(filepath.Join(parent, "epoch-5"), res, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "epoch 4") {
		t.Fatalf("epoch 4 filed as epoch-5: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// Full layers (fanout -1) are stored as a CSR: samples-<l> holds the rows
// one after the other and offsets-<l>.i64 their offsets, after the edge
// ids. The round trip is exact, alone and mixed with sampled layers, with
// and without edge ids and compression.
func TestWriteReadFullLayers(t *testing.T) {
	for _, comp := range []string{"", "zstd"} {
		for _, fanouts := range [][]int{{-1}, {-1, 3}, {2, -1}, {-1, -1}} {
			for _, eids := range []bool{false, true} {
				res := epochtest.NewResult(t, uint64(len(fanouts)), 400, fanouts)
				if eids {
					epochtest.WithEdgeIDs(res)
				}
				dir := filepath.Join(t.TempDir(), "ep")
				if err := Write(dir, res, WriteOptions{Compress: comp}); err != nil {
					t.Fatal(err)
				}
				got, err := Read(dir)
				if err != nil {
					t.Fatalf("%q %v eids %v: %v", comp, fanouts, eids, err)
				}
				if !epochtest.EqualResult(got, res) {
					t.Fatalf("%q %v eids %v: round trip differs", comp, fanouts, eids)
				}
				suffix := map[string]string{"": "", "zstd": ".zst"}[comp]
				for l, k := range fanouts {
					_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("offsets-%d.i64%s", l, suffix)))
					if (err == nil) != (k == epoch.AllNeighbors) {
						t.Fatalf("%v layer %d: offsets file: %v", fanouts, l, err)
					}
				}
			}
		}
	}
}

func TestReadFullLayersCorruption(t *testing.T) {
	res := epochtest.WithEdgeIDs(epochtest.NewResult(t, 3, 400, []int{-1, 3}))
	edit := editEpochManifest
	// Arrays: frontier-0 samples-0 frontier-1 samples-1 frontier-2
	// edges-0 edges-1 offsets-0.
	for _, c := range []struct {
		name    string
		mut     func(t *testing.T, dir string)
		mention string
	}{
		{"missing", func(t *testing.T, d string) { os.Remove(filepath.Join(d, "offsets-0.i64")) }, "offsets-0.i64"},
		{"bit flip", func(t *testing.T, d string) { flipByte(t, filepath.Join(d, "offsets-0.i64"), 9) }, "offsets-0.i64"},
		{"length", edit(func(m map[string]any) { array(m, 7)["length"] = 3 }), "offsets-0"},
		{"name", edit(func(m map[string]any) { array(m, 7)["name"] = "offsets-1" }), "offsets-0"},
		{"fanout", edit(func(m map[string]any) { m["fanouts"] = []any{-2, 3} }), "fanout -2"},
		{"fanout sampled", edit(func(m map[string]any) { m["fanouts"] = []any{4, 3} }), "arrays"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "epoch-4")
			if err := Write(dir, res, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			c.mut(t, dir)
			_, err := Read(dir)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("got %v, want ErrCorrupt mentioning %q", err, c.mention)
			}
		})
	}
	// Valid checksums, broken invariant: an empty slot in a full layer.
	bad := epochtest.NewResult(t, 3, 400, []int{-1, 3})
	bad.Layers[0].Samples[0] = -1
	dir := filepath.Join(t.TempDir(), "epoch-4")
	if err := Write(dir, bad, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrCorrupt) || !errors.Is(err, epoch.ErrInvalid) || !strings.Contains(err.Error(), "layer 0 row") {
		t.Fatalf("empty slot in a full layer: %v", err)
	}
}
