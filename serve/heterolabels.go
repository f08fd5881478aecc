package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/heteroepoch"
)

// HeteroLabels are one node type's labels, read by local id
// (*featstore.Store, whose reads check the label pages' CRC-32Cs and
// num_classes, or NodeLabels).
type HeteroLabels interface {
	// ReadLabels copies the labels of ids, in order, into dst;
	// featstore.NoLabel (-1) marks a node without one.
	ReadLabels(ids []uint32, dst []int32) error
}

// NodeLabels are a node type's labels held in memory, one per local id
// (labels/<type>.npy, which from_pyg writes for a type with y and no x).
type NodeLabels []int32

// ReadLabels implements HeteroLabels.
func (l NodeLabels) ReadLabels(ids []uint32, dst []int32) error {
	if len(dst) < len(ids) {
		return fmt.Errorf("serve: ReadLabels: dst holds %d labels, want %d", len(dst), len(ids))
	}
	for i, v := range ids {
		if int64(v) >= int64(len(l)) {
			return fmt.Errorf("serve: label of node %d: the type has %d labels", v, len(l))
		}
		dst[i] = l[v]
	}
	return nil
}

// HeteroLabelsDir is the directory of the per-type label files, relative
// to a heterogeneous graph directory (docs/FORMAT.md, "Per-type splits
// and the Python import").
const HeteroLabelsDir = "labels"

// OpenHeteroLabels returns each node type's labels, in the schema's
// order (nil for a type without): its feature store's when stores[t] has
// labels, else labels/<type>.npy when dir holds one, read by read (one
// label per node of the type, each -1 or a class: ingest.ReadLabels,
// which this package does not import). The store's labels go first
// because from_pyg writes the .npy only for a type without a store. nil,
// nil when no type has labels.
func OpenHeteroLabels(dir string, s *heteroepoch.Schema, stores []*featstore.Store, read func(path string, count uint32) ([]int32, error)) ([]HeteroLabels, error) {
	out := make([]HeteroLabels, len(s.NodeTypes))
	found := false
	for t, nt := range s.NodeTypes {
		if stores != nil && stores[t] != nil && stores[t].HasLabels() {
			out[t], found = stores[t], true
			continue
		}
		path := filepath.Join(dir, HeteroLabelsDir, nt.Name+".npy")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		l, err := read(path, nt.Count)
		if err != nil {
			return nil, fmt.Errorf("serve: labels of node type %q: %w", nt.Name, err)
		}
		if len(l) != int(nt.Count) {
			return nil, fmt.Errorf("serve: labels of node type %q: %s holds %d labels, the type has %d nodes", nt.Name, path, len(l), nt.Count)
		}
		out[t], found = NodeLabels(l), true
	}
	if !found {
		return nil, nil
	}
	return out, nil
}
