package host

import (
	"fmt"
	"math"
	"slices"

	"github.com/streamsampler/streamsampler/rng"
)

// WalkMode is how a random walk chooses its next node (DESIGN §3, "Walks").
type WalkMode int

// The walk modes. The zero value is DeepWalk.
const (
	WalkDeepWalk WalkMode = iota // uniform over the current node's adjacency
	WalkPPR                      // personalized PageRank: restart to the start with probability Restart
	WalkNode2Vec                 // node2vec's second-order walk with return P and in-out Q
)

// walkModeNames are the modes' names, as ParseWalkMode reads them and
// String writes them.
var walkModeNames = [...]string{WalkDeepWalk: "deepwalk", WalkPPR: "ppr", WalkNode2Vec: "node2vec"}

// String returns "deepwalk", "ppr" or "node2vec".
func (m WalkMode) String() string {
	if m >= 0 && int(m) < len(walkModeNames) {
		return walkModeNames[m]
	}
	return fmt.Sprintf("WalkMode(%d)", int(m))
}

// ParseWalkMode reads "deepwalk", "ppr" or "node2vec"; anything else is
// an error wrapping ErrInvalid.
func ParseWalkMode(s string) (WalkMode, error) {
	for m, name := range walkModeNames {
		if s == name {
			return WalkMode(m), nil
		}
	}
	return 0, fmt.Errorf("%w: walk mode %q: want deepwalk, ppr or node2vec", ErrInvalid, s)
}

// MaxWalks bounds a walk set: walk ids are uint32 (DESIGN §3: W = R·n <
// 2^32).
const MaxWalks = 1<<32 - 1

// WalkConfig is a walk set's parameters: with the start nodes they fix
// every walk (DESIGN §3, "Walks").
type WalkConfig struct {
	Mode          WalkMode
	Length        int     // steps L >= 1; a walk row has L+1 nodes
	WalksPerNode  int     // R >= 1
	Seed          uint64  // the walks are a pure function of it
	Restart       float64 // PPR's restart probability α, in [0, 1)
	StopAtRestart bool    // PPR: the walk ends at its first restart instead of jumping back
	P, Q          float64 // node2vec's return and in-out parameters, > 0 (zero values mean 1)
}

// Check reports a parameter out of range, wrapping ErrInvalid: Length
// and WalksPerNode at least 1 (Length below 2^32, as steps are uint32),
// Restart in [0, 1), P and Q positive and finite (or 0, meaning 1), a
// known Mode. Parameters of other modes are checked too, so that a typo
// is not silently ignored.
func (c WalkConfig) Check() error {
	switch {
	case c.Mode < WalkDeepWalk || c.Mode > WalkNode2Vec:
		return fmt.Errorf("%w: walk mode %d", ErrInvalid, int(c.Mode))
	case c.Length < 1 || uint64(c.Length) > math.MaxUint32:
		return fmt.Errorf("%w: walk length %d, want 1..%d steps", ErrInvalid, c.Length, uint32(math.MaxUint32))
	case c.WalksPerNode < 1 || uint64(c.WalksPerNode) > MaxWalks:
		return fmt.Errorf("%w: %d walks per node, want 1..%d", ErrInvalid, c.WalksPerNode, uint32(MaxWalks))
	case !(c.Restart >= 0 && c.Restart < 1):
		return fmt.Errorf("%w: restart probability %v, want [0, 1)", ErrInvalid, c.Restart)
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"p", c.P}, {"q", c.Q}} {
		if !(x.v >= 0) || math.IsInf(x.v, 0) || math.IsInf(1/x.v, 0) && x.v != 0 {
			return fmt.Errorf("%w: node2vec %s = %v, want a positive finite number", ErrInvalid, x.name, x.v)
		}
	}
	return nil
}

// CheckStarts is Check for a walk set over starts on a graph of numNodes
// nodes: also node ids fitting int32, W = R·len(starts) <= MaxWalks, each row's L+1 nodes fitting
// memory's indexing, and every start a node of the graph.
func (c WalkConfig) CheckStarts(starts []uint32, numNodes uint32) error {
	if err := c.Check(); err != nil {
		return err
	}
	if numNodes > math.MaxInt32+1 {
		return fmt.Errorf("%w: graph has %d nodes, but walks are int32 rows (ids below 2^31)", ErrInvalid, numNodes)
	}
	if uint64(len(starts))*uint64(c.WalksPerNode) > MaxWalks {
		return fmt.Errorf("%w: %d starts × %d walks per node is over %d walks", ErrInvalid, len(starts), c.WalksPerNode, uint64(MaxWalks))
	}
	if w := NumWalks(len(starts), c); w > 0 && c.Length+1 > math.MaxInt/4/w {
		return fmt.Errorf("%w: %d walks of %d nodes do not fit in memory", ErrInvalid, w, c.Length+1)
	}
	for i, s := range starts {
		if s >= numNodes {
			return fmt.Errorf("%w: start %d (position %d) is not a node: graph has %d nodes", ErrInvalid, s, i, numNodes)
		}
	}
	return nil
}

// NumWalks is the number of walks W = R·starts of a walk set (the rows of
// its output).
func NumWalks(starts int, c WalkConfig) int { return c.WalksPerNode * starts }

// WalkThresholds are a walk set's decision thresholds (rng.Threshold),
// computed once on the host in float64 and handed to every device as
// integers, so that no device's floating point decides a walk.
type WalkThresholds struct {
	Restart  uint64                 // PPR: threshold(α)
	Node2Vec rng.Node2VecThresholds // node2vec: by candidate kind
}

// Thresholds returns c's thresholds; P and Q of 0 count as 1.
func (c WalkConfig) Thresholds() WalkThresholds {
	return WalkThresholds{Restart: rng.Threshold(c.Restart), Node2Vec: rng.Node2Vec(orOne(c.P), orOne(c.Q))}
}

// orOne is x, or 1 for the zero value.
func orOne(x float64) float64 {
	if x == 0 {
		return 1
	}
	return x
}

// UniformStep returns the node a DeepWalk step takes from a node with
// adjacency nb (len(nb) >= 1) for walk w at the step of key: its 0th
// candidate. It is also node2vec's first step and PPR's step when it does
// not restart.
func UniformStep(key uint64, walk uint32, nb []uint32) uint32 {
	return nb[rng.Candidate(key, walk, 0, uint32(len(nb)))]
}

// PPRRestarts reports whether walk w restarts (or, with StopAtRestart,
// ends) at the step of key: decision 0 against the restart threshold. It
// reads no adjacency, so a streaming walker can settle it before the
// current node's chunk arrives; a walk at a node without neighbors ends
// whatever it says.
func PPRRestarts(key uint64, walk uint32, restart uint64) bool {
	return rng.Decide(key, walk, 0, restart)
}

// Node2VecKindThreshold returns the acceptance threshold of candidate x
// of a walk that came from u: Return if x == u, else Near if near (x is
// in u's adjacency), else Far.
func Node2VecKindThreshold(t rng.Node2VecThresholds, x, u uint32, near bool) uint64 {
	switch {
	case x == u:
		return t.Return
	case near:
		return t.Near
	}
	return t.Far
}

// Node2VecAccepts reports whether attempt a (0-based) of walk w at the
// step of key takes its candidate x, for a walk that came from u, near
// telling whether x is in u's adjacency: the decision against x's kind's
// threshold comes out true, or a is the last attempt (rng.MaxAttempts-1),
// whose candidate is taken anyway.
func Node2VecAccepts(t rng.Node2VecThresholds, key uint64, walk, a, x, u uint32, near bool) bool {
	return a >= rng.MaxAttempts-1 || rng.Decide(key, walk, a, Node2VecKindThreshold(t, x, u, near))
}

// Node2VecSettle is Node2VecAccepts where nearness is not known yet (u's
// adjacency not at hand): settled reports whether the answer is the same
// whether x is in u's adjacency or not (x == u, the last attempt, or a
// decision word below both the Near and Far thresholds or at or above
// both), and accept is then Node2VecAccepts' answer. An unsettled attempt
// needs IsNeighbor(adjacency of u, x).
func Node2VecSettle(t rng.Node2VecThresholds, key uint64, walk, a, x, u uint32) (accept, settled bool) {
	near := Node2VecAccepts(t, key, walk, a, x, u, true)
	far := Node2VecAccepts(t, key, walk, a, x, u, false)
	return near, near == far
}

// IsNeighbor reports whether x is in the sorted adjacency adj (which may
// repeat neighbors: a binary search finds any copy).
func IsNeighbor(adj []uint32, x uint32) bool {
	_, ok := slices.BinarySearch(adj, x)
	return ok
}

// Node2VecStep returns the node a node2vec step (t >= 2) takes from a
// node with adjacency nb (len(nb) >= 1) for walk w at the step of key,
// the walk having come from u, whose adjacency is prev: the first
// accepted of up to rng.MaxAttempts candidates.
func Node2VecStep(t rng.Node2VecThresholds, key uint64, walk uint32, nb []uint32, u uint32, prev []uint32) uint32 {
	d := uint32(len(nb))
	for a := uint32(0); ; a++ {
		x := nb[rng.Candidate(key, walk, a, d)]
		if Node2VecAccepts(t, key, walk, a, x, u, IsNeighbor(prev, x)) {
			return x
		}
	}
}

// ReferenceWalks walks every start R times over g, in memory and as
// plainly as possible: it is the definition every walker is tested
// against (DESIGN §3, "Walks"). It returns W = R·len(starts) rows of L+1
// int32, row-major: row w = r·len(starts) + i is walk w, from starts[i];
// a walk that ends (a node without neighbors, or PPR's first restart with
// StopAtRestart) is padded with -1. It reads adjacencies only through
// g.Neighbors.
func ReferenceWalks(g Adjacency, starts []uint32, c WalkConfig) ([]int32, error) {
	if err := c.CheckStarts(starts, g.NumNodes()); err != nil {
		return nil, err
	}
	out := make([]int32, NumWalks(len(starts), c)*(c.Length+1))
	if err := ReferenceWalksInto(g, starts, c, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReferenceWalksInto is ReferenceWalks writing the walks into out
// (NumWalks(len(starts), c)·(Length+1) entries, e.g. the data of a
// memory-mapped .npy), a row at a time.
func ReferenceWalksInto(g Adjacency, starts []uint32, c WalkConfig, out []int32) error {
	if err := c.CheckStarts(starts, g.NumNodes()); err != nil {
		return err
	}
	n, row := len(starts), c.Length+1
	if len(out) != NumWalks(n, c)*row {
		return fmt.Errorf("%w: output of %d entries for %d walks of %d nodes", ErrInvalid, len(out), NumWalks(n, c), row)
	}
	thr := c.Thresholds()
	keys := make([]uint64, row) // keys[t] for step t >= 1
	for t := 1; t < row; t++ {
		keys[t] = rng.WalkKey(c.Seed, uint32(t))
	}
	for w := range NumWalks(n, c) {
		walk := out[w*row : (w+1)*row]
		if err := referenceWalk(g, walk, uint32(w), starts[w%n], keys, c, thr); err != nil {
			return fmt.Errorf("reference walk %d from node %d: %w", w, starts[w%n], err)
		}
	}
	return nil
}

// referenceWalk fills walk (L+1 nodes) with walk w from start.
func referenceWalk(g Adjacency, walk []int32, w, start uint32, keys []uint64, c WalkConfig, thr WalkThresholds) error {
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
		case c.Mode == WalkPPR && PPRRestarts(keys[t], w, thr.Restart):
			next, ok = start, !c.StopAtRestart
		case c.Mode == WalkNode2Vec && t >= 2:
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
