package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// RelationInput is one relation of a heterogeneous graph to build and its
// edge lists: pairs (src id, dst id), local ids of the Src and Dst node
// types, in any format Build reads.
type RelationInput struct {
	Src, Rel, Dst string
	Inputs        []string
}

// NodeFeatures is a node type's feature matrix (and labels) to pack, as
// PackFeatures packs a homogeneous graph's.
type NodeFeatures struct {
	Type     string
	Features string
	Labels   string          // "" for none
	Dim      int             // raw rows only
	DType    featstore.DType // raw rows only
}

// HeteroOptions configure BuildHetero.
type HeteroOptions struct {
	// NodeTypes in their fixed order, with their counts.
	NodeTypes []heterofmt.NodeType
	// Relations read from edge lists, or
	Relations []RelationInput
	// Generate, when not nil, generates the relations (typed R-MAT) instead
	// of reading them; its node types are used when NodeTypes is empty.
	Generate *TypedRMATOptions
	// AddReverse adds, as PyG's ToUndirected does, (dst, rev_REL, src)
	// for every relation between two types unless that relation is given,
	// and stores a relation within one type in both directions.
	AddReverse bool
	// Features per node type (optional; any subset of the types).
	Features []NodeFeatures
	// Build carries the options of every relation's build: ChunkSize,
	// Memory, Dedup, SelfLoops (within one type; a relation between two
	// types keeps every edge), Format, Force (of the whole directory),
	// Progress and CreatedBy. NumNodes, Reverse, Symmetrize and Columns
	// are BuildHetero's to set and must be zero.
	Build BuildOptions
}

// RelationSummary is one relation's build.
type RelationSummary struct {
	Relation  string `json:"relation"` // src___rel___dst
	ReverseOf string `json:"reverse_of,omitempty"`
	*Summary
}

// HeteroSummary describes a finished heterogeneous build.
type HeteroSummary struct {
	Dir            string               `json:"dir"`
	NodeTypes      []heterofmt.NodeType `json:"node_types"`
	Relations      []RelationSummary    `json:"relations"`
	Features       []*FeatureSummary    `json:"features,omitempty"`
	NumEdges       uint64               `json:"num_edges"`   // stored, over all relations
	InputEdges     uint64               `json:"input_edges"` // read (or generated), over all relation builds
	InputBytes     int64                `json:"input_bytes"`
	Seconds        float64              `json:"seconds"`
	StaleRemoved   []string             `json:"stale_removed,omitempty"`
	ProcReadBytes  int64                `json:"proc_read_bytes"`
	ProcWriteBytes int64                `json:"proc_write_bytes"`
	Manifest       *heterofmt.Manifest  `json:"-"`
	Bytes          int64                `json:"bytes"` // of every relation's edges.chunks
	Options        HeteroSummaryOptions `json:"options"`
}

// HeteroSummaryOptions records the build's options in the summary.
type HeteroSummaryOptions struct {
	AddReverse bool   `json:"add_reverse"`
	Dedup      bool   `json:"dedup"`
	SelfLoops  string `json:"self_loops"`
	ChunkSize  int64  `json:"chunk_size"`
}

// heteroFiles are the names a heterogeneous directory may hold; with
// Force, only a directory holding nothing else is replaced.
var heteroFiles = map[string]bool{heterofmt.ManifestFile: true, heterofmt.RelationsDir: true, heterofmt.FeaturesDir: true}

// plannedRelation is a relation as BuildHetero builds it.
type plannedRelation struct {
	heterofmt.Relation
	inputs     []string
	gen        int  // index into Generate.Relations, -1 for files
	flip       bool // a reverse: rows are the inputs' first column
	symmetrize bool
}

// BuildHetero builds the heterogeneous graph directory out
// (docs/FORMAT.md, "Heterogeneous graph directories"): every relation
// with Build, one after another, each into relations/SRC___REL___DST/ as
// in-edges (row = dst node, entries = its src nodes) with num_nodes
// max(count(src), count(dst)) and each input column checked against its
// node type's count; then each node type's features into
// features/TYPE/; then hetero.json, last. All of it is written in a
// hidden temporary directory beside out, moved into place once complete
// (with Force, swapped with the old directory), and removed on any
// failure or cancellation of ctx.
//
// Relations are built one after another, not at once: each build already
// uses every core in its passes and the whole memory budget for its
// partition, and concurrent builds would halve both and interleave their
// sequential disk streams.
func BuildHetero(ctx context.Context, out string, o HeteroOptions) (sum *HeteroSummary, err error) {
	t0 := time.Now()
	if o.Build.NumNodes != 0 || o.Build.Reverse || o.Build.Symmetrize || o.Build.Columns != nil {
		return nil, errors.New("build: a heterogeneous build sets num-nodes, reverse and symmetrize per relation itself")
	}
	if o.Build.ChunkSize == 0 {
		o.Build.ChunkSize = chunkfmt.DefaultChunkSize
	}
	if o.Build.SelfLoops == "" {
		o.Build.SelfLoops = chunkfmt.SelfLoopsKeep
	}
	m, plan, err := planHetero(&o)
	if err != nil {
		return nil, err
	}
	out = filepath.Clean(out)
	if err := checkHeteroOutput(out, o.Build.Force); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	stale, err := atomicfile.RemoveStaleTemps(out)
	if err != nil {
		return nil, fmt.Errorf("build: removing temporary directories of earlier builds of %s: %w", out, err)
	}
	tmp, err := atomicfile.TempDir(out)
	if err != nil {
		return nil, fmt.Errorf("build: creating a temporary directory next to the output: %w", err)
	}
	installed := false
	defer func() {
		if !installed {
			os.RemoveAll(tmp)
			sum = nil
		}
	}()
	if err := os.Mkdir(filepath.Join(tmp, heterofmt.RelationsDir), 0o755); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	sum = &HeteroSummary{Dir: out, NodeTypes: m.NodeTypes, StaleRemoved: stale,
		Options: HeteroSummaryOptions{AddReverse: o.AddReverse, Dedup: o.Build.Dedup, SelfLoops: o.Build.SelfLoops, ChunkSize: o.Build.ChunkSize}}
	for i := range plan {
		p := &plan[i]
		if o.Build.Progress != nil {
			fmt.Fprintf(o.Build.Progress, "relation %d/%d %s\n", i+1, len(plan), p.String())
		}
		rs, err := buildRelation(ctx, tmp, m, p, o)
		if err != nil {
			return nil, fmt.Errorf("relation %s: %w", p.String(), err)
		}
		rm, err := chunkfmt.ReadManifest(filepath.Join(tmp, filepath.FromSlash(p.Dir)))
		if err != nil {
			return nil, fmt.Errorf("relation %s: %w", p.String(), err)
		}
		p.Graph = rm.Fingerprint()
		m.Relations = append(m.Relations, p.Relation)
		sum.Relations = append(sum.Relations, RelationSummary{Relation: p.Key(), ReverseOf: p.ReverseOf, Summary: rs})
		sum.NumEdges += rs.NumEdges
		sum.InputEdges += rs.InputEdges
		sum.InputBytes += rs.InputBytes
		sum.Bytes += rm.FileSize()
	}
	for _, f := range o.Features {
		fp, _ := m.NodeTypeFingerprint(f.Type)
		dir := filepath.Join(tmp, filepath.FromSlash(heterofmt.FeatureDir(f.Type)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		fs, err := PackFeatures(ctx, f.Features, dir, FeatureOptions{Labels: f.Labels, Dim: f.Dim, DType: f.DType,
			Progress: o.Build.Progress, CreatedBy: o.Build.CreatedBy, Graph: &fp})
		if err != nil {
			return nil, fmt.Errorf("build: node type %s: features: %w", f.Type, err)
		}
		fs.Dir = filepath.Join(out, filepath.FromSlash(heterofmt.FeatureDir(f.Type)))
		sum.Features = append(sum.Features, fs)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := heterofmt.Write(tmp, m); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if err := install(tmp, out); err != nil {
		return nil, err
	}
	installed = true
	sum.Manifest = m
	sum.Seconds = time.Since(t0).Seconds()
	sum.ProcReadBytes, sum.ProcWriteBytes = procIO()
	return sum, nil
}

// buildRelation builds relation p into tmp with Build.
func buildRelation(ctx context.Context, tmp string, m *heterofmt.Manifest, p *plannedRelation, o HeteroOptions) (*Summary, error) {
	bo := o.Build
	bo.Force = false
	// The input's columns are those of the relation given; a reverse
	// reads them unchanged and stores the first column's adjacency.
	fwdSrc, fwdDst := p.Src, p.Dst
	if p.flip {
		fwdSrc, fwdDst = p.Dst, p.Src
	}
	bo.Columns = &ColumnBounds{Src: m.Count(fwdSrc), Dst: m.Count(fwdDst), SrcName: fwdSrc, DstName: fwdDst}
	bo.NumNodes = m.RelationRows(&p.Relation)
	bo.Reverse = !p.flip
	bo.Symmetrize = p.symmetrize
	if p.Src != p.Dst {
		// Ids of two types: u == v is no self-loop.
		bo.SelfLoops = chunkfmt.SelfLoopsKeep
	}
	if bo.NumNodes == 0 {
		return nil, fmt.Errorf("node types %s and %s have no nodes", p.Src, p.Dst)
	}
	if p.gen >= 0 {
		g := newTypedGen(o.Generate, p.gen)
		bo.gens = []generated{{name: "rmat:" + p.Key(), edges: g.edges, open: g.source}}
	}
	return Build(ctx, p.inputs, filepath.Join(tmp, filepath.FromSlash(p.Dir)), bo)
}

// planHetero checks the options and lists the relations to build, the
// added reverses after the relations given.
func planHetero(o *HeteroOptions) (*heterofmt.Manifest, []plannedRelation, error) {
	m := &heterofmt.Manifest{Version: heterofmt.FormatVersion, NodeTypes: o.NodeTypes, CreatedBy: o.Build.CreatedBy}
	var plan []plannedRelation
	add := func(src, rel, dst string, inputs []string, gen int) {
		plan = append(plan, plannedRelation{Relation: heterofmt.Relation{Src: src, Rel: rel, Dst: dst, Dir: heterofmt.RelationDir(src, rel, dst)}, inputs: inputs, gen: gen})
	}
	if o.Generate != nil {
		if len(o.Relations) > 0 {
			return nil, nil, errors.New("build: give relations to read or a generator, not both")
		}
		if err := o.Generate.normalize(); err != nil {
			return nil, nil, err
		}
		if len(m.NodeTypes) == 0 {
			m.NodeTypes = o.Generate.NodeTypes
		}
		for i, r := range o.Generate.Relations {
			add(r.Src, r.Rel, r.Dst, nil, i)
		}
	} else {
		for _, r := range o.Relations {
			if len(r.Inputs) == 0 {
				return nil, nil, fmt.Errorf("build: relation (%s, %s, %s): no input files", r.Src, r.Rel, r.Dst)
			}
			add(r.Src, r.Rel, r.Dst, r.Inputs, -1)
		}
	}
	if len(plan) == 0 {
		return nil, nil, errors.New("build: no relations: give --relation SRC,REL,DST=PATH, --ogb-raw DIR or a generator")
	}
	if err := checkTypes(m.NodeTypes); err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, p := range plan {
		for _, n := range []string{p.Src, p.Rel, p.Dst} {
			if err := heterofmt.ValidName(n); err != nil {
				return nil, nil, fmt.Errorf("build: relation %s: %w", p.String(), err)
			}
		}
		for _, t := range []string{p.Src, p.Dst} {
			if m.NodeType(t) < 0 {
				return nil, nil, fmt.Errorf("build: relation %s: node type %q is not among the node types (%s)", p.String(), t, typeNames(m.NodeTypes))
			}
		}
		if seen[p.Key()] {
			return nil, nil, fmt.Errorf("build: relation %s given twice", p.String())
		}
		seen[p.Key()] = true
	}
	if o.AddReverse {
		n := len(plan)
		for i := range n {
			p := &plan[i]
			if p.Src == p.Dst {
				// PyG's ToUndirected (merge=True) makes a relation within
				// one type undirected in place rather than adding rev_.
				p.symmetrize = true
				continue
			}
			rel := "rev_" + p.Rel
			if seen[heterofmt.Key(p.Dst, rel, p.Src)] {
				continue
			}
			if err := heterofmt.ValidName(rel); err != nil {
				return nil, nil, fmt.Errorf("build: --add-reverse: relation %s: %w", p.String(), err)
			}
			r := plannedRelation{Relation: heterofmt.Relation{Src: p.Dst, Rel: rel, Dst: p.Src, Dir: heterofmt.RelationDir(p.Dst, rel, p.Src), ReverseOf: p.Key()},
				inputs: p.inputs, gen: p.gen, flip: true}
			seen[r.Key()] = true
			plan = append(plan, r)
		}
	}
	ft := map[string]bool{}
	for _, f := range o.Features {
		if m.NodeType(f.Type) < 0 {
			return nil, nil, fmt.Errorf("build: features of node type %q: no such node type (%s)", f.Type, typeNames(m.NodeTypes))
		}
		if ft[f.Type] {
			return nil, nil, fmt.Errorf("build: features of node type %q given twice", f.Type)
		}
		ft[f.Type] = true
	}
	return m, plan, nil
}

func checkTypes(ts []heterofmt.NodeType) error {
	if len(ts) == 0 {
		return errors.New("build: no node types: give --node-types TYPE=COUNT,... (or a num-node-dict CSV)")
	}
	seen := map[string]bool{}
	for _, t := range ts {
		if err := heterofmt.ValidName(t.Name); err != nil {
			return fmt.Errorf("build: node type: %w", err)
		}
		if seen[t.Name] {
			return fmt.Errorf("build: node type %q given twice", t.Name)
		}
		seen[t.Name] = true
		if t.Count > chunkfmt.MaxNodes {
			return fmt.Errorf("build: node type %s: %d nodes: more than the maximum %d", t.Name, t.Count, chunkfmt.MaxNodes)
		}
	}
	return nil
}

func typeNames(ts []heterofmt.NodeType) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name)
	}
	return b.String()
}

func checkHeteroOutput(out string, force bool) error {
	return checkReplaceable(out, force, heteroFiles, "a heterogeneous build does not write")
}

// ParseNodeTypes parses TYPE=COUNT,TYPE=COUNT (chunkify --node-types).
func ParseNodeTypes(s string) ([]heterofmt.NodeType, error) {
	var ts []heterofmt.NodeType
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		name, count, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want TYPE=COUNT", f)
		}
		n, err := parseCount(count)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		ts = append(ts, heterofmt.NodeType{Name: strings.TrimSpace(name), Count: n})
	}
	return ts, checkTypes(ts)
}

// ParseRelationFlag parses SRC,REL,DST=PATH (chunkify --relation).
func ParseRelationFlag(s string) (RelationInput, error) {
	triple, path, ok := strings.Cut(s, "=")
	parts := strings.Split(triple, ",")
	if !ok || path == "" || len(parts) != 3 {
		return RelationInput{}, fmt.Errorf("%q: want SRC,REL,DST=PATH", s)
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
		if err := heterofmt.ValidName(parts[i]); err != nil {
			return RelationInput{}, fmt.Errorf("%q: %w", s, err)
		}
	}
	return RelationInput{Src: parts[0], Rel: parts[1], Dst: parts[2], Inputs: []string{path}}, nil
}

func parseCount(s string) (uint32, error) {
	var n uint64
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty count")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("count %q: want a non-negative integer", s)
		}
		n = n*10 + uint64(c-'0')
		if n > chunkfmt.MaxNodes {
			return 0, fmt.Errorf("count %s: more than the maximum %d nodes", s, chunkfmt.MaxNodes)
		}
	}
	return uint32(n), nil
}
