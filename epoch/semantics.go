package epoch

import "fmt"

// Semantics says which nodes each hop of a minibatch expands. Both are
// assembled from the same epoch Result (every node a hop expands is in
// that hop's frontier with its sample), so the choice costs no sampling
// and can be made per minibatch.
type Semantics uint8

const (
	// DGL is DGL's to_block: hop h+1 expands every node of hop h's Src,
	// the seeds included, so a node reached at hop h also gets its
	// layer-h+1 sample. Each hop's Dst is the previous hop's Src.
	DGL Semantics = iota
	// PyG is PyG's NeighborLoader: hop h+1 expands only the nodes first
	// reached at hop h (the seeds at hop 1). Each hop's Dst is those
	// nodes, a contiguous range of the minibatch's node list n_id.
	PyG
)

// String returns "dgl" or "pyg".
func (s Semantics) String() string {
	switch s {
	case DGL:
		return "dgl"
	case PyG:
		return "pyg"
	}
	return fmt.Sprintf("semantics(%d)", uint8(s))
}

// ParseSemantics parses "dgl" or "pyg"; other names are an error wrapping
// ErrConfig.
func ParseSemantics(name string) (Semantics, error) {
	switch name {
	case "dgl":
		return DGL, nil
	case "pyg":
		return PyG, nil
	}
	return 0, fmt.Errorf("%w: semantics %q, want dgl or pyg", ErrConfig, name)
}

// Valid reports whether s is one of the named semantics.
func (s Semantics) Valid() bool { return s <= PyG }
