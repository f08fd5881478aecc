package epoch

import (
	"errors"
	"fmt"
	"slices"

	"github.com/streamsampler/streamsampler/rng"
)

// ErrShard is wrapped by Shard for a rank or world size out of range.
var ErrShard = errors.New("epoch: bad shard")

// Domain constants keep the shuffle streams apart from each other and from
// the sampling keys (rng.Key packs epoch<<8|layer, below 2^40).
const (
	domainBatches = 0xB47C_0000_0000_0001
	domainShard   = 0x5AAD_0000_0000_0002
)

// permKey derives the key of one seeded permutation stream.
func permKey(seed uint64, epoch uint32, domain uint64) uint64 {
	return rng.Mix64(seed^domain) ^ rng.Mix64(uint64(epoch)|domain<<40)
}

// permute shuffles a in place with Fisher–Yates, drawing slot i's swap
// partner from counter i of the stream: a pure function of (key, len(a)),
// identical on every platform. rng.Below's multiply-shift bias is below
// n/2^32, negligible for node sets.
func permute(a []uint32, key uint64) {
	for i := len(a) - 1; i > 0; i-- {
		j := rng.Below(rng.Mix64(key+uint64(i)), uint32(i+1))
		a[i], a[j] = a[j], a[i]
	}
}

// Shuffle returns a new slice holding nodes in the seeded order of the
// given epoch: the order in which the epoch's minibatches visit them.
func Shuffle(nodes []uint32, seed uint64, epoch uint32) []uint32 {
	out := slices.Clone(nodes)
	permute(out, permKey(seed, epoch, domainBatches))
	return out
}

// Batches shuffles nodes for the epoch (Shuffle) and cuts them into
// minibatches of batchSize; the last may be shorter. The minibatches are
// sub-slices of one new slice. batchSize must be at least 1 (like
// slices.Chunk, it panics otherwise: callers validate user input).
func Batches(nodes []uint32, batchSize int, seed uint64, epoch uint32) [][]uint32 {
	if batchSize < 1 {
		panic(fmt.Sprintf("epoch.Batches: batch size %d, want >= 1", batchSize))
	}
	s := Shuffle(nodes, seed, epoch)
	out := make([][]uint32, 0, (len(s)+batchSize-1)/batchSize)
	for i := 0; i < len(s); i += batchSize {
		out = append(out, s[i:min(i+batchSize, len(s)):min(i+batchSize, len(s))])
	}
	return out
}

// NumBatches returns how many minibatches Batches cuts n nodes into.
func NumBatches(n, batchSize int) int { return (n + batchSize - 1) / batchSize }

// Shard returns rank's share of the training nodes for the epoch, sorted
// (it is that rank's frontier_0): the sorted unique nodes are permuted
// with a seeded per-epoch permutation that every rank computes alike, and
// rank r takes positions [r·n/world, (r+1)·n/world). So the shards of one
// epoch are disjoint, cover the set, differ in size by at most one, and
// change from epoch to epoch. The input may be in any order and is not
// modified.
func Shard(nodes []uint32, rank, world int, seed uint64, epoch uint32) ([]uint32, error) {
	if world < 1 {
		return nil, fmt.Errorf("%w: world size %d, want >= 1", ErrShard, world)
	}
	if rank < 0 || rank >= world {
		return nil, fmt.Errorf("%w: rank %d, want 0..%d for world size %d", ErrShard, rank, world-1, world)
	}
	all := slices.Clone(nodes)
	slices.Sort(all)
	all = slices.Compact(all)
	if world == 1 {
		return all, nil
	}
	permute(all, permKey(seed, epoch, domainShard))
	lo, hi := shardBounds(len(all), rank, world)
	out := slices.Clone(all[lo:hi])
	slices.Sort(out)
	return out, nil
}

// shardBounds returns the positions [lo, hi) of rank's shard among n
// permuted nodes.
func shardBounds(n, rank, world int) (lo, hi int) {
	return int(int64(rank) * int64(n) / int64(world)), int(int64(rank+1) * int64(n) / int64(world))
}

// ShardSize returns the size of rank's shard of n distinct training nodes
// among world ranks (the same in every epoch): n/world or one more.
func ShardSize(n, rank, world int) int {
	lo, hi := shardBounds(n, rank, world)
	return hi - lo
}
