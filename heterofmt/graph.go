package heterofmt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
)

// DefectError is a defect of a heterogeneous directory found across its
// parts: the file, the relation (when one is concerned), the node and
// what is wrong. errors.Is(err, ErrCorrupt) is true for it.
type DefectError struct {
	File     string // path relative to the directory, e.g. relations/a___r___b/edges.chunks
	Relation string // the relation's triple, "(src, rel, dst)"; "" when none
	Chunk    int    // chunk index, -1 when none
	Node     int64  // the node concerned (a local id of the type What names), -1 when none
	What     string
}

// Error renders "heterofmt: FILE: relation (s, r, d): chunk C: row V: what".
func (e *DefectError) Error() string {
	s := "heterofmt: " + e.File + ": "
	if e.Relation != "" {
		s += "relation " + e.Relation + ": "
	}
	if e.Chunk >= 0 {
		s += fmt.Sprintf("chunk %d: ", e.Chunk)
	}
	if e.Node >= 0 {
		s += fmt.Sprintf("row %d: ", e.Node)
	}
	return s + e.What
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *DefectError) Is(target error) bool { return target == ErrCorrupt }

// Graph is a heterogeneous graph directory opened for reading: its
// manifest and every relation opened as a chunkfmt.Graph (memory-mapped,
// each chunk CRC-checked on first use), in the manifest's order.
type Graph struct {
	Dir       string
	Manifest  *Manifest
	Relations []*chunkfmt.Graph
}

// Open opens the heterogeneous graph in dir: hetero.json (ErrNoManifest,
// ErrBadManifest), then every relation's directory (chunkfmt.Open: its
// manifest, chunks.info, file size and chunk headers), each checked
// against hetero.json: the same fingerprint, num_nodes = max(count(src), count(dst)), and no edges in a chunk that
// holds only rows past count(dst). Errors name the relation and the file.
// Verify checks every id.
func Open(dir string) (*Graph, error) {
	m, err := Read(dir)
	if err != nil {
		return nil, err
	}
	g := &Graph{Dir: dir, Manifest: m}
	for i := range m.Relations {
		r := &m.Relations[i]
		rg, err := chunkfmt.Open(filepath.Join(dir, filepath.FromSlash(r.Dir)))
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("heterofmt: %s: relation %s: %w", r.Dir, r, err)
		}
		g.Relations = append(g.Relations, rg)
		if err := checkRelation(m, r, rg.Manifest); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// checkRelation compares relation r's manifest rm with hetero.json.
func checkRelation(m *Manifest, r *Relation, rm *chunkfmt.Manifest) error {
	file := r.Dir + "/" + chunkfmt.ManifestFile
	if fp := rm.Fingerprint(); fp != r.Graph {
		return fmt.Errorf("%w: %s: relation %s: %d nodes, %d edges, %d chunks (chunk CRCs %08x); %s records %d nodes, %d edges, %d chunks (chunk CRCs %08x): the relation was replaced after the graph was built; build the graph again",
			ErrMismatch, file, r, fp.NumNodes, fp.NumEdges, fp.Chunks, fp.ChunkCRCs, ManifestFile, r.Graph.NumNodes, r.Graph.NumEdges, r.Graph.Chunks, r.Graph.ChunkCRCs)
	}
	nd := m.Count(r.Dst)
	for i, c := range rm.Chunks {
		if c.Start >= nd && c.NEdges > 0 {
			return &DefectError{File: file, Relation: r.String(), Chunk: i, Node: -1,
				What: fmt.Sprintf("chunks[%d] holds rows %d..%d, past the %d %s nodes, yet %d edges: rows past count(%s) must be empty", i, c.Start, c.End-1, nd, r.Dst, c.NEdges, r.Dst)}
		}
	}
	return nil
}

// Relation returns the opened relation (src, rel, dst) and its manifest
// entry, or nil.
func (g *Graph) Relation(src, rel, dst string) (*chunkfmt.Graph, *Relation) {
	i := g.Manifest.Relation(src, rel, dst)
	if i < 0 || i >= len(g.Relations) {
		return nil, nil
	}
	return g.Relations[i], &g.Manifest.Relations[i]
}

// Close unmaps every relation.
func (g *Graph) Close() error {
	var first error
	for _, r := range g.Relations {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	g.Relations = nil
	return first
}

// Verify checks the heterogeneous directory dir completely: Open's checks;
// every relation with chunkfmt.VerifyContext (every invariant of the
// chunk format, every CRC); the cross checks the chunk format cannot make
// (every src id below count(src), every row past count(dst) empty); no
// relation directory that hetero.json does not name; and every node
// type's feature store, where it has one (featstore.VerifyFor, bound to
// Manifest.NodeTypeFingerprint). The first
// defect is returned, naming the file, the relation, the row and what was
// expected.
func Verify(ctx context.Context, dir string) error {
	g, err := Open(dir)
	if err != nil {
		return err
	}
	defer g.Close()
	m := g.Manifest
	for i := range m.Relations {
		r := &m.Relations[i]
		if err := chunkfmt.VerifyContext(ctx, filepath.Join(dir, filepath.FromSlash(r.Dir))); err != nil {
			return fmt.Errorf("heterofmt: %s: relation %s: %w", r.Dir, r, err)
		}
		if err := checkIDs(ctx, m, r, g.Relations[i]); err != nil {
			return err
		}
	}
	if err := checkStrays(dir, m); err != nil {
		return err
	}
	for _, t := range m.NodeTypes {
		sd := filepath.Join(dir, filepath.FromSlash(FeatureDir(t.Name)))
		if _, err := os.Stat(sd); errors.Is(err, os.ErrNotExist) {
			continue
		}
		fp, _ := m.NodeTypeFingerprint(t.Name)
		err := featstore.VerifyFor(ctx, sd, fp)
		if errors.Is(err, featstore.ErrNoFeatures) {
			// No features.json: no store (one whose pack never
			// finished, as in a homogeneous graph directory).
			continue
		}
		if err != nil {
			return fmt.Errorf("heterofmt: %s: node type %s: %w", FeatureDir(t.Name), t.Name, err)
		}
	}
	return nil
}

// checkIDs scans relation r: every neighbor (a src id) below count(src),
// every row at or past count(dst) empty. Only the bound that is tighter
// than the relation's num_nodes needs the scan; chunkfmt.Verify checked
// the rest.
func checkIDs(ctx context.Context, m *Manifest, r *Relation, rg *chunkfmt.Graph) error {
	ns, nd := m.Count(r.Src), m.Count(r.Dst)
	rm := rg.Manifest
	if ns >= rm.NumNodes && nd >= rm.NumNodes {
		return nil
	}
	file := r.Dir + "/" + chunkfmt.ChunksFile
	for i := range rm.Chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		w, err := rg.ChunkWords(i)
		if err != nil {
			return fmt.Errorf("heterofmt: %s: relation %s: %w", r.Dir, r, err)
		}
		cv := chunkfmt.ChunkView(w)
		start := cv.StartNode()
		for j := range cv.NumNodes() {
			v := start + j
			nb := cv.Neighbors(j)
			if v >= nd && len(nb) > 0 {
				return &DefectError{File: file, Relation: r.String(), Chunk: i, Node: int64(v),
					What: fmt.Sprintf("%d in-edges, but there are only %d %s nodes: rows past count(%s) must be empty", len(nb), nd, r.Dst, r.Dst)}
			}
			for k, u := range nb {
				if u >= ns {
					return &DefectError{File: file, Relation: r.String(), Chunk: i, Node: int64(v),
						What: fmt.Sprintf("position %d: src id %d is not below the %d %s nodes", k, u, ns, r.Src)}
				}
			}
		}
	}
	return nil
}

// checkStrays reports a relation directory hetero.json does not name: a
// relation of another build mixed in, or one removed from the manifest by
// hand.
func checkStrays(dir string, m *Manifest) error {
	ents, err := os.ReadDir(filepath.Join(dir, RelationsDir))
	if err != nil {
		return fmt.Errorf("heterofmt: %w", err)
	}
	named := map[string]bool{}
	for _, r := range m.Relations {
		named[r.Key()] = true
	}
	for _, e := range ents {
		if !named[e.Name()] {
			return &DefectError{File: RelationsDir + "/" + e.Name(), Chunk: -1, Node: -1,
				What: fmt.Sprintf("not a relation of %s: a directory of another graph, or a relation removed from the manifest", ManifestFile)}
		}
	}
	return nil
}
