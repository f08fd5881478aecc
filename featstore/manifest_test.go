package featstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseManifestRejects(t *testing.T) {
	dir := newGraph(t, 2000, false)
	good := *pack(t, dir, Options{DType: Float16, Dim: 3, BlockSize: 4096}, randomBytes(14, 12000), randomLabels(14, 2000, 3))
	enc := func(m Manifest) []byte { b, _ := json.Marshal(m); return b }
	if _, err := ParseManifest(enc(good)); err != nil {
		t.Fatal(err)
	}
	labels := *good.Labels
	cases := []struct {
		name, want string
		edit       func(m *Manifest)
	}{
		{"version", "version 2", func(m *Manifest) { m.Version = 2 }},
		{"num_nodes", "graph.num_nodes", func(m *Manifest) { m.NumNodes++ }},
		{"dtype", "features.dtype", func(m *Manifest) { m.Features.DType = "float64" }},
		{"dim", "features.dim", func(m *Manifest) { m.Features.Dim = 0 }},
		{"row_bytes", "features.row_bytes", func(m *Manifest) { m.Features.RowBytes = 12 }},
		{"size", "features.size", func(m *Manifest) { m.Features.Size-- }},
		{"block size", "block_size", func(m *Manifest) { m.Features.BlockSize = 1000 }},
		{"crcs", "block CRCs", func(m *Manifest) { m.Features.BlockCRCs = m.Features.BlockCRCs[1:] }},
		{"file", "features.file", func(m *Manifest) { m.Features.File = "../x.bin" }},
		{"label dtype", "labels.dtype", func(m *Manifest) { l := labels; l.DType = "int64"; m.Labels = &l }},
		{"labeled", "labeled", func(m *Manifest) { l := labels; l.Labeled = 3000; m.Labels = &l }},
		{"same file", "both", func(m *Manifest) { l := labels; l.File = m.Features.File; m.Labels = &l }},
	}
	for _, c := range cases {
		m := good
		m.Features.BlockCRCs = append([]uint32(nil), good.Features.BlockCRCs...)
		c.edit(&m)
		_, err := ParseManifest(enc(m))
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadManifest mentioning %q", c.name, err, c.want)
		}
	}
	for _, b := range []string{`{"version":1} {}`, `{"version":1,"extra":2}`, `[`} {
		if _, err := ParseManifest([]byte(b)); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: %v", b, err)
		}
	}
}
