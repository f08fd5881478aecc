package heteroepoch

import (
	"errors"
	"fmt"
	"math"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
)

// ErrInvalid is wrapped by every error about the caller's arguments: a
// schema that contradicts itself, seeds of an unknown type or beyond their
// type's count, fanouts of the wrong shape. A CLI or server tells bad
// input from a device or I/O failure by it.
var ErrInvalid = errors.New("heteroepoch: invalid request")

// MaxFanout is the largest sampled fanout of a relation's layer: the
// sampling kernels' (hls.MaxFanout, which heterosample's tests pin it to;
// this package does not import the devices).
const MaxFanout = 64

// NodeType is a node type and its node count: its nodes are the local ids
// 0..Count-1.
type NodeType struct {
	Name  string
	Count uint32
}

// Relation is a canonical edge type (Src, Name, Dst): edges from Src nodes
// to Dst nodes, stored as in-edges (row v of the relation's graph holds
// the Src nodes with an edge to Dst node v).
type Relation struct {
	Src, Name, Dst string
}

// String is the relation as OGB and the graph directory name it,
// src___rel___dst.
func (r Relation) String() string { return r.Src + "___" + r.Name + "___" + r.Dst }

// Schema is a heterogeneous graph's node types and relations, each in a
// fixed order: a relation's index in Relations is its relation id, the one
// its random-number key carries (DESIGN §3 "Relations"), and the order in
// which a hop visits the relations (PyG's edge types). The graph
// directory's hetero.json fixes both orders.
type Schema struct {
	NodeTypes []NodeType
	Relations []Relation
}

// Validate checks that type names are unique and non-empty, every
// relation names known types, no relation is listed twice, and the counts
// fit a graph (at most chunkfmt.MaxNodes nodes of a type).
func (s *Schema) Validate() error {
	if len(s.NodeTypes) == 0 {
		return fmt.Errorf("%w: schema without node types", ErrInvalid)
	}
	if len(s.Relations) == 0 {
		return fmt.Errorf("%w: schema without relations", ErrInvalid)
	}
	if uint64(len(s.Relations)) > math.MaxUint32 {
		return fmt.Errorf("%w: %d relations, at most %d", ErrInvalid, len(s.Relations), uint64(math.MaxUint32))
	}
	seen := make(map[string]int, len(s.NodeTypes))
	for i, t := range s.NodeTypes {
		if t.Name == "" {
			return fmt.Errorf("%w: node type %d has no name", ErrInvalid, i)
		}
		if j, ok := seen[t.Name]; ok {
			return fmt.Errorf("%w: node type %q listed twice (positions %d and %d)", ErrInvalid, t.Name, j, i)
		}
		if t.Count > chunkfmt.MaxNodes {
			return fmt.Errorf("%w: node type %q has %d nodes, at most %d", ErrInvalid, t.Name, t.Count, uint32(chunkfmt.MaxNodes))
		}
		seen[t.Name] = i
	}
	rels := make(map[Relation]int, len(s.Relations))
	for i, r := range s.Relations {
		if r.Name == "" {
			return fmt.Errorf("%w: relation %d (%s) has no name", ErrInvalid, i, r)
		}
		for _, end := range []string{r.Src, r.Dst} {
			if _, ok := seen[end]; !ok {
				return fmt.Errorf("%w: relation %d (%s): unknown node type %q", ErrInvalid, i, r, end)
			}
		}
		if j, ok := rels[r]; ok {
			return fmt.Errorf("%w: relation %s listed twice (positions %d and %d)", ErrInvalid, r, j, i)
		}
		rels[r] = i
	}
	return nil
}

// TypeIndex returns the position of node type name, or -1.
func (s *Schema) TypeIndex(name string) int {
	for i, t := range s.NodeTypes {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// RelTypes returns each relation's src and dst type indices (the schema
// must be valid).
func (s *Schema) RelTypes() (src, dst []int) {
	src, dst = make([]int, len(s.Relations)), make([]int, len(s.Relations))
	for i, r := range s.Relations {
		src[i], dst[i] = s.TypeIndex(r.Src), s.TypeIndex(r.Dst)
	}
	return src, dst
}

// Seeds are the seeds of one node type, local ids of that type.
type Seeds struct {
	Type  string
	Nodes []uint32
}

// seedsByType checks seeds against the schema (known types, each at most
// once, nodes below their type's count; with distinct, no node twice) and
// returns them by type index.
func (s *Schema) seedsByType(seeds []Seeds, distinct bool) ([][]uint32, error) {
	out := make([][]uint32, len(s.NodeTypes))
	given := make([]bool, len(s.NodeTypes))
	for _, sd := range seeds {
		t := s.TypeIndex(sd.Type)
		if t < 0 {
			return nil, fmt.Errorf("%w: seeds of unknown node type %q", ErrInvalid, sd.Type)
		}
		if given[t] {
			return nil, fmt.Errorf("%w: seeds of node type %q given twice", ErrInvalid, sd.Type)
		}
		given[t] = true
		n := s.NodeTypes[t].Count
		var dup map[uint32]int
		if distinct {
			dup = make(map[uint32]int, len(sd.Nodes))
		}
		for i, v := range sd.Nodes {
			if v >= n {
				return nil, fmt.Errorf("%w: seed %d (position %d) of node type %q is not a node: the type has %d nodes", ErrInvalid, v, i, sd.Type, n)
			}
			if dup != nil {
				if j, ok := dup[v]; ok {
					return nil, fmt.Errorf("%w: seed %d of node type %q at positions %d and %d (a minibatch's seeds are distinct)", ErrInvalid, v, sd.Type, j, i)
				}
				dup[v] = i
			}
		}
		out[t] = sd.Nodes
	}
	return out, nil
}

// NumLayers returns the layer count of per-relation fanouts after
// checking them: one list per relation in the schema's order, all of the
// same length (1..epoch.MaxLayers), each entry 0 (the relation is not
// sampled at that hop, as PyG's 0), 1..MaxFanout, or
// epoch.AllNeighbors.
func (s *Schema) NumLayers(fanouts [][]int) (int, error) {
	if len(fanouts) != len(s.Relations) {
		return 0, fmt.Errorf("%w: %d fanout lists for %d relations (one per relation, in the schema's order)", ErrInvalid, len(fanouts), len(s.Relations))
	}
	L := len(fanouts[0])
	if L == 0 || L > epoch.MaxLayers {
		return 0, fmt.Errorf("%w: relation %s has %d fanouts, want 1..%d layers", ErrInvalid, s.Relations[0], L, epoch.MaxLayers)
	}
	for r, fs := range fanouts {
		if len(fs) != L {
			return 0, fmt.Errorf("%w: relation %s has %d fanouts but relation %s has %d: every relation needs one per hop", ErrInvalid, s.Relations[r], len(fs), s.Relations[0], L)
		}
		for l, k := range fs {
			if (k < 0 || k > MaxFanout) && k != epoch.AllNeighbors {
				return 0, fmt.Errorf("%w: relation %s: fanout %d of layer %d (hop %d), want 0 (not sampled), 1..%d or %d (every neighbor)", ErrInvalid, s.Relations[r], k, l, l+1, MaxFanout, epoch.AllNeighbors)
			}
		}
	}
	return L, nil
}

// FanoutsFromMap turns PyG's num_neighbors dict (and DGL's per-etype
// fanout dicts) into one list per relation in the schema's order, with
// PyG's rules (torch_geometric/sampler/base.py, NumNeighbors._get_values):
// a key naming no relation of the graph is an error; a relation missing
// from the map takes def, and without def (nil) is an error; the lists
// must all have the same length. Keys are src___rel___dst (Relation.String).
func (s *Schema) FanoutsFromMap(m map[string][]int, def []int) ([][]int, error) {
	index := make(map[string]int, len(s.Relations))
	for i, r := range s.Relations {
		index[r.String()] = i
	}
	for k := range m {
		if _, ok := index[k]; !ok {
			return nil, fmt.Errorf("%w: fanouts for %q, which is not a relation of the graph", ErrInvalid, k)
		}
	}
	out := make([][]int, len(s.Relations))
	for i, r := range s.Relations {
		fs, ok := m[r.String()]
		switch {
		case ok:
			out[i] = fs
		case def != nil:
			out[i] = def
		default:
			return nil, fmt.Errorf("%w: no fanouts for relation %s (and no default)", ErrInvalid, r)
		}
	}
	if _, err := s.NumLayers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Request checks an epoch's request against the schema (what a sampler
// does before its first layer): the schema
// itself, one per-relation part (n of them, named what) for each
// relation, the fanouts' shape; it returns the number of layers and the
// seeds by node type.
func (s *Schema) Request(n int, what string, seeds []Seeds, fanouts [][]int) (int, [][]uint32, error) {
	if err := s.Validate(); err != nil {
		return 0, nil, err
	}
	if n != len(s.Relations) {
		return 0, nil, fmt.Errorf("%w: %d %s for %d relations", ErrInvalid, n, what, len(s.Relations))
	}
	L, err := s.NumLayers(fanouts)
	if err != nil {
		return 0, nil, err
	}
	byType, err := s.seedsByType(seeds, false)
	if err != nil {
		return 0, nil, err
	}
	return L, byType, nil
}
