package walk

import (
	"context"
	"fmt"
	"time"

	"github.com/streamsampler/streamsampler/rng"
)

// Graph is an adjacency the reference walker reads: host.CSR (a graph
// loaded into memory) and host.GraphAdjacency (a memory-mapped graph
// directory) are ones. Neighbors returns a node's sorted adjacency,
// repeats kept.
type Graph interface {
	NumNodes() uint32
	Neighbors(node uint32) ([]uint32, error)
}

// Reference walks every start R times over g, in memory and as plainly as
// possible: it is the definition every walker is tested against (DESIGN
// §3, "Walks"). It returns W = R·len(starts) rows of L+1 int32,
// row-major: row w = r·len(starts) + i is walk w, from starts[i]; a walk
// that ends (a node without neighbors, or PPR's first restart with
// StopAtRestart) is padded with -1. It reads adjacencies only through
// g.Neighbors.
func Reference(g Graph, starts []uint32, c Config) ([]int32, error) {
	if err := c.CheckStarts(starts, g.NumNodes()); err != nil {
		return nil, err
	}
	out := make([]int32, c.OutputLen(len(starts)))
	if err := ReferenceInto(g, starts, c, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReferenceInto is Reference writing the walks into out
// (c.OutputLen(len(starts)) entries, e.g. the data of a memory-mapped
// .npy), a row at a time.
func ReferenceInto(g Graph, starts []uint32, c Config, out []int32) error {
	return referenceInto(context.Background(), g, starts, c, out)
}

// cancelEvery is how many walks the in-memory walker takes between looks
// at its context: often enough to stop within milliseconds, rarely enough
// to cost nothing.
const cancelEvery = 1 << 12

// referenceInto is ReferenceInto stopping with ctx's error when it is
// cancelled (between walks).
func referenceInto(ctx context.Context, g Graph, starts []uint32, c Config, out []int32) error {
	if err := c.CheckOutput(starts, g.NumNodes(), out); err != nil {
		return err
	}
	n, row := len(starts), c.Length+1
	thr := c.Thresholds()
	keys := make([]uint64, row) // keys[t] for step t >= 1
	for t := 1; t < row; t++ {
		keys[t] = rng.WalkKey(c.Seed, uint32(t))
	}
	for w := range NumWalks(n, c) {
		if w%cancelEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		walk := out[w*row : (w+1)*row]
		if err := referenceWalk(g, walk, uint32(w), starts[w%n], keys, c, thr); err != nil {
			return fmt.Errorf("reference walk %d from node %d: %w", w, starts[w%n], err)
		}
	}
	return nil
}

// referenceWalk fills walk (L+1 nodes) with walk w from start.
func referenceWalk(g Graph, walk []int32, w, start uint32, keys []uint64, c Config, thr Thresholds) error {
	walk[0] = int32(start)
	for t := 1; t < len(walk); t++ {
		v := uint32(walk[t-1])
		nb, err := g.Neighbors(v)
		if err != nil {
			return fmt.Errorf("step %d at node %d: %w", t, v, err)
		}
		next, ok := uint32(0), len(nb) > 0
		switch {
		case !ok:
		case c.Mode == PPR && PPRRestarts(keys[t], w, thr.Restart):
			next, ok = start, !c.StopAtRestart
		case c.Mode == Node2Vec && t >= 2:
			u := uint32(walk[t-2])
			prev, err := g.Neighbors(u)
			if err != nil {
				return fmt.Errorf("step %d at node %d from %d: %w", t, v, u, err)
			}
			next = Node2VecStep(thr.Node2Vec, keys[t], w, nb, u, prev)
		default:
			next = UniformStep(keys[t], w, nb)
		}
		if !ok {
			for i := t; i < len(walk); i++ {
				walk[i] = -1
			}
			return nil
		}
		walk[t] = int32(next)
	}
	return nil
}

// EngineMemory is InMemory's Stats.Engine.
const EngineMemory = "memory"

// InMemory is the reference walker as a Walker: Graph held in memory
// (host.LoadCSR loads a graph directory whole), walked by ReferenceInto.
// It is the walker of a graph that fits in memory, and the one a test
// stands in for a backend.
type InMemory struct {
	Graph Graph
}

var _ Walker = InMemory{}

// WalksInto writes Reference's rows into out, stopping between walks when
// ctx is cancelled. Its statistics are its engine and wall time: it
// streams nothing.
func (m InMemory) WalksInto(ctx context.Context, starts []uint32, c Config, out []int32) (*Stats, error) {
	t0 := time.Now()
	if err := referenceInto(ctx, m.Graph, starts, c, out); err != nil {
		return nil, err
	}
	return &Stats{Engine: EngineMemory, Wall: time.Since(t0)}, nil
}
