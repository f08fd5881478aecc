package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/edgeids"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/ingest"
)

// linkFlags are the link-prediction flags (DESIGN §4, "Link epochs"):
// with --train-edges (or --train-eids) the epochs' minibatches are
// training edges instead of --train's nodes. Their names are a contract
// with the Python loaders (streamsampler.pyg.LinkNeighborLoader,
// streamsampler.dgl's edge-prediction sampler).
type linkFlags struct {
	edges, labels, eids string
	neg                 string
	amount              float64
	weight              string
	exclude             string
	reverse             string
}

func (f *linkFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.edges, "train-edges", "", "link prediction: training edges (positives), .npy (2, E) or (E, 2) int, or text lines `src dst [label]`; minibatches of --batch-size edges instead of --train's nodes")
	fl.StringVar(&f.labels, "train-edge-labels", "", "labels of the training edges (--train-edges or --train-eids), .npy [E] float32 or int64 (PyG's edge_label)")
	fl.StringVar(&f.eids, "train-eids", "", "stored edge ids, .npy [E] int: alone, the training edges are these edges of the graph; with --train-edges, each pair's stored id (-1: not stored) instead of looking them up")
	fl.StringVar(&f.neg, "neg-sampling", "none", "negatives per minibatch: none, binary (ceil(P·amount) random pairs labelled 0) or triplet (amount random destinations per positive)")
	fl.Float64Var(&f.amount, "neg-amount", 1, "negatives per positive (binary: any > 0; triplet: a whole number)")
	fl.StringVar(&f.weight, "neg-weight", "uniform", "negative destinations: uniform over the nodes, or degree (by in-degree)")
	fl.StringVar(&f.exclude, "exclude", "none", "edges kept out of a link minibatch's hops: none, self (its positives) or reverse_id (and their reverses); turns on edge ids")
	fl.StringVar(&f.reverse, "reverse-eids", "", "with --exclude reverse_id: .npy [num_edges] int, each stored edge's reverse's id (-1: none; DGL's reverse_eids); default: the stored edge (dst, src) of each positive")
}

// on reports whether link mode is asked for.
func (f *linkFlags) on() bool { return f.edges != "" || f.eids != "" }

// check validates the flags that need no file.
func (f *linkFlags) check() error {
	if !f.on() {
		for name, v := range map[string]string{"--train-edge-labels": f.labels, "--reverse-eids": f.reverse} {
			if v != "" {
				return usagef("%s needs --train-edges or --train-eids", name)
			}
		}
		if f.neg != "none" || f.exclude != "none" {
			return usagef("--neg-sampling and --exclude need --train-edges or --train-eids")
		}
		return nil
	}
	if _, err := epoch.ParseNegMode(f.neg); err != nil {
		return usagef("--neg-sampling %q: want none, binary or triplet", f.neg)
	}
	if _, err := epoch.ParseExclude(f.exclude); err != nil {
		return usagef("--exclude %q: want none, self or reverse_id", f.exclude)
	}
	if f.weight != "uniform" && f.weight != "degree" {
		return usagef("--neg-weight %q: want uniform or degree", f.weight)
	}
	if f.reverse != "" && f.exclude != "reverse_id" {
		return usagef("--reverse-eids needs --exclude reverse_id")
	}
	return nil
}

// link reads the training edges and builds the epochs' epoch.Link for the
// graph in dir: the pairs (and labels), their stored edge ids and the
// graph's row offsets when exclusion or degree-weighted negatives need
// them (one pass over the chunks, package edgeids).
func (f *linkFlags) link(ctx context.Context, dir string, m *chunkfmt.Manifest) (*epoch.Link, error) {
	neg, _ := epoch.ParseNegMode(f.neg)
	excl, _ := epoch.ParseExclude(f.exclude)
	l := &epoch.Link{Edges: &epoch.EdgeSet{}, Neg: neg, Amount: f.amount, NumNodes: m.NumNodes, Exclude: excl}
	var given []int64
	if f.eids != "" {
		ids, err := ingest.ReadEdgeIDs(f.eids, m.NumEdges, f.edges != "")
		if err != nil {
			return nil, fmt.Errorf("--train-eids: %w", err)
		}
		given = ids
	}
	needPass := excl != epoch.ExcludeNone || f.weight == "degree" || f.edges == ""
	var g *chunkfmt.Graph
	if needPass {
		var err error
		if g, err = chunkfmt.Open(dir); err != nil {
			return nil, err
		}
		defer g.Close()
	}
	es := l.Edges
	var indptr []uint64
	if f.edges != "" {
		p, err := ingest.ReadEdgePairs(f.edges, m.NumNodes)
		if err != nil {
			return nil, fmt.Errorf("--train-edges: %w", err)
		}
		es.Src, es.Dst, es.LabelsF32, es.LabelsI64 = p.Src, p.Dst, p.LabelsF32, p.LabelsI64
		if given != nil && len(given) != len(es.Src) {
			return nil, usagef("--train-eids has %d ids for the %d pairs of --train-edges", len(given), len(es.Src))
		}
		es.EIDs = given
	} else {
		var err error
		if es.Src, es.Dst, indptr, err = edgeids.Pairs(ctx, g, given); err != nil {
			return nil, err
		}
		es.EIDs = given
	}
	if f.labels != "" {
		var err error
		if es.LabelsF32, es.LabelsI64, err = ingest.ReadEdgeLabels(f.labels, len(es.Src)); err != nil {
			return nil, fmt.Errorf("--train-edge-labels: %w", err)
		}
	}
	if needPass && (indptr == nil || (excl != epoch.ExcludeNone && es.EIDs == nil) || (excl == epoch.ExcludeReverse && f.reverse == "")) {
		// One pass resolves the pairs, their reverses and the offsets.
		src := append(append([]uint32{}, es.Src...), es.Dst...)
		dst := append(append([]uint32{}, es.Dst...), es.Src...)
		ids, ip, err := edgeids.Resolve(ctx, g, src, dst)
		if err != nil {
			return nil, err
		}
		indptr = ip
		if es.EIDs == nil {
			es.EIDs = ids[:len(es.Src)]
		}
		if excl == epoch.ExcludeReverse && f.reverse == "" {
			es.RevEIDs = ids[len(es.Src):]
		}
	}
	if f.reverse != "" {
		rev, err := ingest.ReadEdgeIDs(f.reverse, m.NumEdges, true)
		if err != nil {
			return nil, fmt.Errorf("--reverse-eids: %w", err)
		}
		if uint64(len(rev)) != m.NumEdges {
			return nil, usagef("--reverse-eids has %d ids, want one per stored edge (%d)", len(rev), m.NumEdges)
		}
		l.Reverse = rev
	}
	if f.weight == "degree" {
		l.Indptr = indptr
	}
	if err := l.Check(); err != nil {
		return nil, usageError{err}
	}
	return l, nil
}
