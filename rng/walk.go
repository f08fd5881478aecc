package rng

import "math"

// Random walks (DESIGN §3, "Walks") draw from the same generator as
// neighbor sampling, with the walk's id where sampling has the node: a
// walk is a pure function of (seed, walk id, step, current node, previous
// node), so every backend gives the same walks in any order.
//
// A walk set has a seed, start nodes s_0..s_{n-1} and R walks per start;
// walk w = r·n + i (r < R, i < n; PyG's batch.repeat(R) order) starts at
// s_i. Step t = 1..L moves the walk from v_{t-1} to v_t with the draws of
// WalkKey(seed, t):
//
//   - draw 2a (a = 0, 1, …) picks the a-th candidate, the neighbor at
//     position Below(Draw(key, w, 2a), degree) of the current node: the
//     only draws that need the adjacency, so they are what a device's
//     walk step computes (Candidate);
//   - draw 2a+1 decides about it without the adjacency (Decide): the
//     restart of personalized PageRank (a = 0), node2vec's acceptance of
//     candidate a.
//
// A node without neighbors ends its walk.

// walkDomain marks walk keys: sampling keys mix (epoch<<8 | layer) < 2^40,
// walk keys 2^63 | step, so the two never share a Mix64 input (Mix64 is a
// bijection) and a walk's draws are not a sample's.
const walkDomain = 1 << 63

// MaxAttempts bounds node2vec's rejection sampling: after MaxAttempts
// rejected candidates the last one is taken. The walk's law differs from
// node2vec's by at most (1 - min acceptance)^MaxAttempts (2^-26.6 for
// p, q in [1/4, 4]).
const MaxAttempts = 64

// WalkKey is the key of step t (t >= 1) of every walk of the seed.
func WalkKey(seed uint64, step uint32) uint64 {
	return Mix64(seed) ^ Mix64(walkDomain|uint64(step))
}

// Candidate returns the position in the current node's adjacency of walk
// w's a-th candidate at the step of key: Below(Draw(key, w, 2a), degree).
// degree must be at least 1.
func Candidate(key uint64, walk uint32, a uint32, degree uint32) uint32 {
	return Below(Draw(key, walk, 2*a), degree)
}

// Decide reports whether walk w's decision a at the step of key comes out
// true for a threshold from Threshold: the high 32 bits of Draw(key, w,
// 2a+1) are below it.
func Decide(key uint64, walk uint32, a uint32, threshold uint64) bool {
	return Draw(key, walk, 2*a+1)>>32 < threshold
}

// Threshold is the decision threshold of probability prob, clamped to
// [0, 1]: floor(prob·2^32), in [0, 2^32]. Decide is then true with
// probability threshold/2^32. Hosts compute it once, in float64, and hand
// the integer to every device, so that no device's floating point decides
// a walk.
func Threshold(prob float64) uint64 {
	switch {
	case !(prob > 0): // NaN too
		return 0
	case prob >= 1:
		return 1 << 32
	}
	return uint64(math.Floor(prob * (1 << 32)))
}

// Node2VecThresholds are the acceptance thresholds of node2vec's three
// kinds of candidate x for a walk that came from u: Return (x == u, weight
// 1/p), Near (x a neighbor of u, weight 1) and Far (otherwise, weight 1/q),
// each its weight over the largest of the three, as Threshold.
type Node2VecThresholds struct{ Return, Near, Far uint64 }

// Node2Vec returns the thresholds for return parameter p and in-out
// parameter q (both > 0).
func Node2Vec(p, q float64) Node2VecThresholds {
	m := math.Max(1/p, math.Max(1, 1/q))
	return Node2VecThresholds{Return: Threshold(1 / p / m), Near: Threshold(1 / m), Far: Threshold(1 / q / m)}
}
