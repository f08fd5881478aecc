package featstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseManifestRejects(t *testing.T) {
	dir := newGraph(t, 2000, false)
	good := *pack(t, dir, Options{DType: Float16, Dim: 3}, randomBytes(14, 12000), randomLabels(14, 2000, 3))
	// enc encodes m with a checksum that agrees: what is refused is the
	// content, not an edit.
	enc := func(m Manifest) []byte {
		m.Checksum = m.ComputeChecksum()
		b, _ := json.Marshal(m)
		return b
	}
	if _, err := ParseManifest(enc(good)); err != nil {
		t.Fatal(err)
	}
	labels := *good.Labels
	cases := []struct {
		name, want string
		edit       func(m *Manifest)
	}{
		{"version", "version 3", func(m *Manifest) { m.Version = 3 }},
		{"num_nodes", "graph.num_nodes", func(m *Manifest) { m.NumNodes++ }},
		{"dtype", "features.dtype", func(m *Manifest) { m.Features.DType = "float64" }},
		{"dim", "features.dim", func(m *Manifest) { m.Features.Dim = 0 }},
		{"row_bytes", "features.row_bytes", func(m *Manifest) { m.Features.RowBytes = 12 }},
		{"size", "features.size", func(m *Manifest) { m.Features.Size-- }},
		{"crc span", "features.crc_span", func(m *Manifest) { m.Features.CRCSpan = 4096 }},
		{"label crc span", "labels.crc_span", func(m *Manifest) { l := labels; l.CRCSpan = 4; m.Labels = &l }},
		{"crc file", "crcs.file", func(m *Manifest) { m.Features.CRCs.File = "features-2.crc" }},
		{"file", "features.file", func(m *Manifest) { m.Features.File = "../x.bin" }},
		{"kind", "features.file", func(m *Manifest) { m.Features.File = "labels-1.bin" }},
		{"label dtype", "labels.dtype", func(m *Manifest) { l := labels; l.DType = "int64"; m.Labels = &l }},
		{"labeled", "labeled", func(m *Manifest) { l := labels; l.Labeled = 3000; m.Labels = &l }},
		{"num_classes", "num_classes", func(m *Manifest) { l := labels; l.NumClasses = MaxNumClasses + 1; m.Labels = &l }},
		{"generation", "generations", func(m *Manifest) {
			l := labels
			l.File, l.CRCs.File = "labels-2.bin", "labels-2.crc"
			m.Labels = &l
		}},
	}
	for _, c := range cases {
		m := good
		c.edit(&m)
		_, err := ParseManifest(enc(m))
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadManifest mentioning %q", c.name, err, c.want)
		}
	}
	for _, b := range []string{`{"version":2} {}`, `{"version":2,"extra":2}`, `[`} {
		if _, err := ParseManifest([]byte(b)); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: %v", b, err)
		}
	}
}

// TestManifestEdits: consistent edits of features.json — each keeps the
// manifest valid by itself (float32 ↔ float16 with row_bytes and size
// matched, dim 3 → 6, a file renamed, a label count changed) — are
// refused by ParseManifest, Open and Verify (the checksum), so no reader
// reinterprets the bytes.
func TestManifestEdits(t *testing.T) {
	dir := newGraph(t, 2000, false)
	pack(t, dir, Options{DType: Float32, Dim: 6, CreatedBy: "test"}, randomBytes(15, 2000*24), randomLabels(15, 2000, 4))
	path := filepath.Join(dir, ManifestFile)
	orig, _ := os.ReadFile(path)
	edits := []struct{ name, from, to string }{
		{"dtype", `"dtype": "float32"`, `"dtype": "float16"`},
		{"dim", `"dim": 6,`, `"dim": 12,`},
		{"source", `"created_by": "test"`, `"created_by": "tset"`},
		{"labeled", `"labeled": `, `"labeled": 1`},
	}
	for _, e := range edits {
		b := bytes.Replace(orig, []byte(e.from), []byte(e.to), 1)
		if bytes.Equal(b, orig) {
			t.Fatalf("%s: %q not in features.json:\n%s", e.name, e.from, orig)
		}
		os.WriteFile(path, b, 0o644)
		for what, err := range map[string]error{"ReadManifest": func() error { _, err := ReadManifest(dir); return err }(),
			"Open": func() error { _, err := Open(dir); return err }(), "Verify": Verify(dir)} {
			if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), path) {
				t.Errorf("%s edited: %s = %v", e.name, what, err)
			}
		}
	}
	os.WriteFile(path, orig, 0o644)
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

// TestVersion1Refused: a store of format version 1 (one CRC per 4 MiB
// block, no manifest checksum) is refused with the command that rebuilds
// it; that command (Create with Force) keeps its files until the new
// store lands, so a v1 feature file can itself be the input repacked.
func TestVersion1Refused(t *testing.T) {
	dir := newGraph(t, 100, false)
	v1 := `{"version":1,"num_nodes":100,"graph":{},"features":{"file":"features-1.bin","size":100,"block_size":4194304,"block_crc32c":[1],"dtype":"uint8","dim":1,"row_bytes":1}}`
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(v1), 0o644)
	rows := randomBytes(16, 100)
	os.WriteFile(filepath.Join(dir, "features-1.bin"), rows, 0o644)
	for what, err := range map[string]error{"ReadManifest": func() error { _, err := ReadManifest(dir); return err }(),
		"Open": func() error { _, err := Open(dir); return err }(), "Verify": Verify(dir)} {
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), "version 1") || !strings.Contains(err.Error(), "chunkify features") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("%s of a v1 store: %v", what, err)
		}
	}
	if _, err := Create(dir, Options{DType: Uint8, Dim: 1}); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a v1 store without Force: %v", err)
	}
	w, err := Create(dir, Options{DType: Uint8, Dim: 1, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile(filepath.Join(dir, "features-1.bin"))
	if err != nil || !bytes.Equal(in, rows) {
		t.Fatalf("the v1 rows were removed before the new store landed (%v)", err)
	}
	w.Append(in)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirFiles(t, dir); !slicesEqual(got, storeFiles("2", false)) {
		t.Fatalf("files %v", got)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// FuzzParseManifest: ParseManifest never panics, and whatever it accepts
// is valid, carries its checksum, and encodes back to a manifest it
// accepts again. Seeds (testdata/fuzz/FuzzParseManifest) are a real
// manifest, a version 1 one, and edits of them.
func FuzzParseManifest(f *testing.F) {
	dir := newGraph(f, 300, false)
	pack(f, dir, Options{DType: Float16, Dim: 5, CreatedBy: "fuzz"}, randomBytes(17, 3000), randomLabels(17, 300, 7))
	good, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(regexp.MustCompile(`"dim": 5`).ReplaceAll(good, []byte(`"dim": 10`)))
	f.Add([]byte(`{"version":1,"num_nodes":1,"features":{"file":"features-1.bin","block_crc32c":[1]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error %v does not wrap ErrBadManifest", err)
			}
			return
		}
		if err := m.Validate(); err != nil || m.Checksum != m.ComputeChecksum() {
			t.Fatalf("accepted an invalid manifest: %v", err)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseManifest(again); err != nil {
			t.Fatalf("its own encoding refused: %v", err)
		}
	})
}
