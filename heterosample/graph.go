package heterosample

import (
	"fmt"
	"path/filepath"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/heterofmt"
)

// SchemaOf is the schema of a heterogeneous graph directory's manifest:
// its node types and relations in hetero.json's order (the relation ids of
// DESIGN §3 "Relations"), and each relation's graph directory under dir.
func SchemaOf(dir string, m *heterofmt.Manifest) (*heteroepoch.Schema, []string) {
	s := &heteroepoch.Schema{NodeTypes: make([]heteroepoch.NodeType, len(m.NodeTypes)), Relations: make([]heteroepoch.Relation, len(m.Relations))}
	for i, t := range m.NodeTypes {
		s.NodeTypes[i] = heteroepoch.NodeType{Name: t.Name, Count: t.Count}
	}
	dirs := make([]string, len(m.Relations))
	for r, rel := range m.Relations {
		s.Relations[r] = heteroepoch.Relation{Src: rel.Src, Name: rel.Rel, Dst: rel.Dst}
		dirs[r] = filepath.Join(dir, filepath.FromSlash(rel.Dir))
	}
	return s, dirs
}

// OpenDir opens the heterogeneous graph directory dir (chunkify build
// --relation, docs/FORMAT.md): hetero.json and every relation checked
// against it (heterofmt.Open: fingerprints, sizes), then a host.Sampler per
// relation (Open). It returns the schema the sampler was opened with.
func OpenDir(dir string, opts Options) (*Sampler, *heteroepoch.Schema, error) {
	g, err := heterofmt.Open(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("heterosample: %w", err)
	}
	// The relations' own files are opened again by their samplers; the
	// checks above are what this open is for.
	if err := g.Close(); err != nil {
		return nil, nil, fmt.Errorf("heterosample: %w", err)
	}
	schema, dirs := SchemaOf(dir, g.Manifest)
	s, err := Open(schema, dirs, opts)
	if err != nil {
		return nil, nil, err
	}
	return s, schema, nil
}
