// Package walk is the random-walk contract of DESIGN §3 ("Walks"): a walk
// set's parameters (Config, Mode) and their checks, the decision
// thresholds the host computes once (Thresholds), the per-step decisions
// every walker makes the same way (UniformStep, PPRRestarts,
// Node2VecAccepts, Node2VecSettle, …), the in-memory reference walker
// (Reference, ReferenceInto), which is the definition every backend is
// tested against, and the one interface walkers implement (Walker): the
// chunk-streaming sampler (host.Sampler), the GPU engine (gpu.Backend)
// and a graph held in memory (InMemory).
//
// The random numbers are rng's (rng/walk.go); this package says what a
// walk does with them. It imports nothing of the project but rng, so that
// the GPU engine and the server take walks without importing the
// streaming sampler, and through it the devices and the HLS kernel.
package walk

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/streamsampler/streamsampler/rng"
)

// ErrInvalid is wrapped by every error about a walk set the caller asked
// for: a parameter out of range, a start that is not a node, an output of
// the wrong size. Callers branch on it to tell a bad request (a usage
// error, a refused protocol request) from a failure of the walker.
var ErrInvalid = errors.New("walk: invalid walk set")

// Mode is how a random walk chooses its next node (DESIGN §3, "Walks").
// Its numbers are the GPU library's SSG_WALK_* and the protocol's walk
// modes, so they must not change.
type Mode int

// The walk modes. The zero value is DeepWalk.
const (
	DeepWalk Mode = iota // uniform over the current node's adjacency
	PPR                  // personalized PageRank: restart to the start with probability Restart
	Node2Vec             // node2vec's second-order walk with return P and in-out Q
)

// modeNames are the modes' names, as ParseMode reads them and String
// writes them.
var modeNames = [...]string{DeepWalk: "deepwalk", PPR: "ppr", Node2Vec: "node2vec"}

// String returns "deepwalk", "ppr" or "node2vec".
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads "deepwalk", "ppr" or "node2vec"; anything else is an
// error wrapping ErrInvalid.
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("%w: walk mode %q: want deepwalk, ppr or node2vec", ErrInvalid, s)
}

// MaxWalks bounds a walk set: walk ids are uint32 (DESIGN §3: W = R·n <
// 2^32).
const MaxWalks = 1<<32 - 1

// Config is a walk set's parameters: with the start nodes they fix every
// walk (DESIGN §3, "Walks").
type Config struct {
	Mode          Mode
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
func (c Config) Check() error {
	switch {
	case c.Mode < DeepWalk || c.Mode > Node2Vec:
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
// nodes: also node ids fitting int32, W = R·len(starts) <= MaxWalks, each
// row's L+1 nodes fitting memory's indexing, and every start a node of
// the graph.
func (c Config) CheckStarts(starts []uint32, numNodes uint32) error {
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

// CheckOutput is CheckStarts for a walker about to write into out: also
// out's length, which must be OutputLen(len(starts)) exactly (a walker
// writes every entry, and a mapped .npy has no room for more). Every
// WalksInto starts with it.
func (c Config) CheckOutput(starts []uint32, numNodes uint32, out []int32) error {
	if err := c.CheckStarts(starts, numNodes); err != nil {
		return err
	}
	if n := c.OutputLen(len(starts)); len(out) != n {
		return fmt.Errorf("%w: output of %d entries for %d walks of %d nodes (want %d)", ErrInvalid, len(out), NumWalks(len(starts), c), c.Length+1, n)
	}
	return nil
}

// NumWalks is the number of walks W = R·starts of a walk set (the rows of
// its output).
func NumWalks(starts int, c Config) int { return c.WalksPerNode * starts }

// OutputLen is the entries of the output of a walk set from starts start
// nodes: NumWalks rows of Length+1 int32 (valid after CheckStarts, which
// bounds it).
func (c Config) OutputLen(starts int) int { return NumWalks(starts, c) * (c.Length + 1) }

// Taken counts, in out (rows of Length+1 entries, as a walker writes
// them), the steps the walks took, the nodes after each start up to its
// row's last non-negative entry, and the walks that ended before step
// Length (their rows padded with -1).
func (c Config) Taken(out []int32) (steps int64, ended int) {
	cols := c.Length + 1
	for r := 0; r+cols <= len(out); r += cols {
		row := out[r : r+cols]
		taken := c.Length
		for taken > 0 && row[taken] < 0 {
			taken--
		}
		steps += int64(taken)
		if taken < c.Length {
			ended++
		}
	}
	return steps, ended
}

// Thresholds are a walk set's decision thresholds (rng.Threshold),
// computed once on the host in float64 and handed to every device as
// integers, so that no device's floating point decides a walk.
type Thresholds struct {
	Restart  uint64                 // PPR: threshold(α)
	Node2Vec rng.Node2VecThresholds // node2vec: by candidate kind
}

// Thresholds returns c's thresholds; P and Q of 0 count as 1.
func (c Config) Thresholds() Thresholds {
	return Thresholds{Restart: rng.Threshold(c.Restart), Node2Vec: rng.Node2Vec(orOne(c.P), orOne(c.Q))}
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
