package epoch

import (
	"errors"
	"fmt"
	"slices"
)

// ErrConfig is wrapped by every error about a Sampling or Config: a value
// the caller (or its user) chose badly, as opposed to a failure while
// running. Command lines map it to a usage error.
var ErrConfig = errors.New("epoch: bad configuration")

// Sampling is what every epoch of a training run is sampled from: the
// training nodes, the fanouts and the random stream, and the data-parallel
// shard. It is the part of a run's configuration that changes the samples;
// a state directory records it (StateConfig) and refuses another.
type Sampling struct {
	Train   []uint32 // every training node (all ranks'), any order; duplicates are ignored
	Fanouts []int    // neighbors per hop, hop 1 first
	Seed    uint64
	Replace bool // sample with replacement
	Rank    int  // this rank, 0 <= Rank < World
	World   int  // data-parallel ranks; 0 means 1
	// trainEdges, set by ForLink, is a link epoch's training edge count:
	// Check then counts edges, not Train's nodes, against the ranks.
	trainEdges int
}

// ForLink returns s checked as a link epoch's sampling (DESIGN §4, "Link
// epochs"): its seeds come from numEdges training edges, not from Train.
func (s Sampling) ForLink(numEdges int) Sampling {
	s.trainEdges = max(numEdges, 0)
	if numEdges == 0 {
		s.trainEdges = -1
	}
	return s
}

// Check reports (wrapping ErrConfig) the first thing wrong with s: no
// fanouts or more than MaxLayers, a fanout below 1 other than AllNeighbors, a rank outside the
// world, or fewer distinct training nodes than ranks (an empty training
// set included: every rank needs a minibatch).
func (s Sampling) Check() error {
	switch {
	case len(s.Fanouts) == 0:
		return fmt.Errorf("%w: no fanouts", ErrConfig)
	case len(s.Fanouts) > MaxLayers:
		return fmt.Errorf("%w: %d fanouts, at most %d", ErrConfig, len(s.Fanouts), MaxLayers)
	}
	for h, k := range s.Fanouts {
		if k < 1 && k != AllNeighbors {
			return fmt.Errorf("%w: fanout %d of layer %d (hop %d), want >= 1 or %d (every neighbor)", ErrConfig, k, h, h+1, AllNeighbors)
		}
	}
	world := s.WorldSize()
	if world < 1 || s.Rank < 0 || s.Rank >= world {
		return fmt.Errorf("%w: rank %d of world size %d, want 0 <= rank < world size", ErrConfig, s.Rank, world)
	}
	if s.trainEdges != 0 {
		if s.trainEdges < world {
			return fmt.Errorf("%w: %d training edges for %d ranks: some rank would have none", ErrConfig, max(s.trainEdges, 0), world)
		}
		return nil
	}
	if n := countDistinct(s.Train); n < world {
		if n == 0 {
			return fmt.Errorf("%w: no training nodes", ErrConfig)
		}
		return fmt.Errorf("%w: %d training nodes for %d ranks: some rank would have none", ErrConfig, n, world)
	}
	return nil
}

// WorldSize is the number of ranks (World, or 1 when unset).
func (s Sampling) WorldSize() int {
	if s.World == 0 {
		return 1
	}
	return s.World
}

// countDistinct counts the distinct values of a without modifying it.
func countDistinct(a []uint32) int {
	if slices.IsSorted(a) {
		n := 0
		for i := range a {
			if i == 0 || a[i] != a[i-1] {
				n++
			}
		}
		return n
	}
	return len(slices.Compact(slices.Sorted(slices.Values(a))))
}

// NumTrain is the number of distinct training nodes.
func (s Sampling) NumTrain() int { return countDistinct(s.Train) }

// Key returns epoch e's key.
func (s Sampling) Key(e uint32) Key { return Key{Seed: s.Seed, Epoch: e, Replace: s.Replace} }

// Seeds returns frontier_0 of epoch e: this rank's shard of the training
// nodes (Shard), sorted. s must have passed Check.
func (s Sampling) Seeds(e uint32) []uint32 {
	seeds, err := Shard(s.Train, s.Rank, s.WorldSize(), s.Seed, e)
	if err != nil {
		panic(fmt.Sprintf("epoch: Sampling.Seeds without Check: %v", err))
	}
	return seeds
}

// BatchesPerRank is the number of minibatches every rank serves per epoch
// for n distinct training nodes: the smallest shard's (n/world nodes), so
// that data-parallel ranks step together. A rank whose shard is one node
// larger leaves out the nodes of its minibatches past that count.
func BatchesPerRank(n, world, batchSize int) int {
	return NumBatches(n/world, batchSize)
}
