// Package hls is the FPGA sampling kernel of the SmartSSD path and the two
// ways of running it without an FPGA.
//
// sample_kernel.cpp is Vitis HLS C++: v++ synthesizes it for the SmartSSD
// (docs/KERNEL.md), and with cgo this package compiles the same file and
// calls it on the CPU, which is what the emulated device runs. Reference is
// the same kernel in Go on top of rng.Sample, the definition that both are
// tested against bit for bit; without cgo, Run is Reference. RunEdges and
// ReferenceEdges also give each sampled slot's chunk-local edge index.
//
// The kernel's walk-step mode (its argument 8) computes the candidates of
// one step of random walks (DESIGN §3 "Walks"): RunWalk and ReferenceWalk
// (RunWalkEdges and ReferenceWalkEdges with edge indices), defined by
// rng.Candidate.
//
// A chunk is the in-memory image of one chunk of edges.chunks as uint32
// words, read here through chunkfmt.ChunkView (the layout is chunkfmt's;
// docs/FORMAT.md).
package hls

import (
	"errors"
	"fmt"
	"math"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/rng"
)

// MaxFanout is the largest fanout the kernel supports. It equals
// MAX_FANOUT in sample_kernel.h, which sizes the FPGA's per-lane registers.
const MaxFanout = 64

// Errors returned by Run and Reference, wrapped with detail; callers branch
// with errors.Is.
var (
	// ErrBadFanout: the fanout is not in 1..MaxFanout.
	ErrBadFanout = errors.New("hls: fanout out of range")
	// ErrBadOutput: the output slice (or the edge slice) is not
	// len(targets)×fanout long, or a walk step's walk ids are not one per
	// node.
	ErrBadOutput = errors.New("hls: output length does not match targets × fanout")
	// ErrTargetOutsideChunk: a target node is not among the chunk's nodes.
	ErrTargetOutsideChunk = errors.New("hls: target outside chunk")
	// ErrBadChunk: the chunk's header or a target's offsets are inconsistent.
	ErrBadChunk = errors.New("hls: malformed chunk")
)

// validate checks everything the C++ kernel trusts, so that it never reads
// or writes outside the slices it is given. It costs O(len(targets)): only
// the targets' own offsets are checked, not the whole chunk's.
// edges is the edge-index output, nil when none is asked for.
func validate(chunk, targets []uint32, out, edges []int32, fanout int) error {
	if fanout < 1 || fanout > MaxFanout {
		return fmt.Errorf("%w: fanout %d, want 1..%d", ErrBadFanout, fanout, MaxFanout)
	}
	if uint64(len(targets)) > math.MaxUint32 {
		return fmt.Errorf("hls: %d targets, at most %d per run", len(targets), uint64(math.MaxUint32))
	}
	if len(out) != len(targets)*fanout {
		return fmt.Errorf("%w: len(out) = %d, want %d targets × fanout %d = %d",
			ErrBadOutput, len(out), len(targets), fanout, len(targets)*fanout)
	}
	if edges != nil && len(edges) != len(out) {
		return fmt.Errorf("%w: len(edges) = %d, want %d targets × fanout %d = %d",
			ErrBadOutput, len(edges), len(targets), fanout, len(out))
	}
	if len(targets) == 0 {
		return nil
	}
	return validateChunk(chunk, targets, edges != nil)
}

// validateChunk checks the chunk's header and every target's offsets, as
// the kernel trusts them; edges says edge indices are asked for (then the
// neighbor words must be countable in int32).
func validateChunk(chunk, targets []uint32, edges bool) error {
	if len(chunk) < chunkfmt.MinHeaderWords {
		return fmt.Errorf("%w: %d words, shorter than the %d-word minimum header", ErrBadChunk, len(chunk), chunkfmt.MinHeaderWords)
	}
	if uint64(len(chunk)) > math.MaxUint32 {
		return fmt.Errorf("%w: %d words, offsets are 32-bit", ErrBadChunk, len(chunk))
	}
	c := chunkfmt.ChunkView(chunk)
	nNodes, start := c.NumNodes(), c.StartNode()
	first := c.HeaderWords() // first neighbor word
	if first > uint64(len(chunk)) {
		return fmt.Errorf("%w: n_nodes %d needs a %d-word header, chunk has %d words",
			ErrBadChunk, nNodes, first, len(chunk))
	}
	if edges && uint64(len(chunk))-first > math.MaxInt32+1 {
		return fmt.Errorf("%w: %d neighbor words, chunk-local edge indices are int32", ErrBadChunk, uint64(len(chunk))-first)
	}
	if uint64(start)+uint64(nNodes) > math.MaxUint32+1 {
		return fmt.Errorf("%w: nodes [%d, %d) overflow 32-bit ids", ErrBadChunk, start, uint64(start)+uint64(nNodes))
	}
	for r, t := range targets {
		idx := t - start
		if t < start || idx >= nNodes {
			return fmt.Errorf("%w: target %d (row %d) not in the chunk's nodes [%d, %d)",
				ErrTargetOutsideChunk, t, r, start, uint64(start)+uint64(nNodes))
		}
		b, e := c.Span(idx)
		if uint64(b) < first || e < b || uint64(e) > uint64(len(chunk)) {
			return fmt.Errorf("%w: node %d: neighbors at words [%d, %d), want inside [%d, %d]",
				ErrBadChunk, t, b, e, first, len(chunk))
		}
	}
	return nil
}

// Reference is the kernel in Go: for each target, rng.Sample over its
// neighbors into out[r*fanout : (r+1)*fanout]. It validates its inputs
// exactly as Run does and allocates nothing.
func Reference(chunk []uint32, targets []uint32, out []int32, fanout int, key uint64, replace bool) error {
	return ReferenceEdges(chunk, targets, out, nil, fanout, key, replace)
}

// ReferenceEdges is Reference that also writes, when edges is not nil
// (then len(edges) == len(out)), each slot's chunk-local edge index: the
// index of the neighbor word it took, counted from the chunk's first
// neighbor word (chunkfmt.ChunkView.HeaderWords), -1 where the slot is
// empty. The position inside the adjacency is rng.Positions', so repeated
// neighbors get their own edges.
func ReferenceEdges(chunk []uint32, targets []uint32, out, edges []int32, fanout int, key uint64, replace bool) error {
	if err := validate(chunk, targets, out, edges, fanout); err != nil {
		return err
	}
	if len(targets) == 0 {
		return nil
	}
	c := chunkfmt.ChunkView(chunk)
	start := c.StartNode()
	first := uint32(c.HeaderWords())
	for r, t := range targets {
		row := out[r*fanout : (r+1)*fanout]
		if edges == nil {
			rng.Sample(row, c.Neighbors(t-start), t, key, replace)
			continue
		}
		b, e := c.Span(t - start)
		erow := edges[r*fanout : (r+1)*fanout]
		rng.Positions(erow, int(e-b), t, key, replace)
		for s, p := range erow {
			if p < 0 {
				row[s] = -1
				continue
			}
			row[s] = int32(chunk[b+uint32(p)])
			erow[s] = int32(b + uint32(p) - first)
		}
	}
	return nil
}

// validateWalk is validate for a walk step: nodes are the targets, and
// there is one walk id per node.
func validateWalk(chunk, nodes, walks []uint32, out, edges []int32, k int) error {
	if err := validate(chunk, nodes, out, edges, k); err != nil {
		return err
	}
	if len(walks) != len(nodes) {
		return fmt.Errorf("%w: len(walks) = %d, want one walk id per node (%d)", ErrBadOutput, len(walks), len(nodes))
	}
	return nil
}

// ReferenceWalk is the kernel's walk-step mode in Go: for walker r, at
// node nodes[r] with degree d on walk walks[r], out[r*k+t] is the
// neighbor at position rng.Candidate(key, walks[r], attempt0+t, d) for
// t < k (candidates attempt0 .. attempt0+k-1 of the step whose key is
// rng.WalkKey(seed, step)), or -1 in all k slots when d == 0. It
// validates its inputs exactly as RunWalk does (len(out) ==
// len(nodes)*k, len(walks) == len(nodes), every node in the chunk) and
// allocates nothing.
func ReferenceWalk(chunk []uint32, nodes, walks []uint32, out []int32, k int, key uint64, attempt0 uint32) error {
	return ReferenceWalkEdges(chunk, nodes, walks, out, nil, k, key, attempt0)
}

// ReferenceWalkEdges is ReferenceWalk that also writes, when edges is not
// nil (then len(edges) == len(out)), each candidate's chunk-local edge
// index (as ReferenceEdges: the neighbor word's index less the chunk's
// header), -1 where the node has no neighbors.
func ReferenceWalkEdges(chunk []uint32, nodes, walks []uint32, out, edges []int32, k int, key uint64, attempt0 uint32) error {
	if err := validateWalk(chunk, nodes, walks, out, edges, k); err != nil {
		return err
	}
	if len(nodes) == 0 {
		return nil
	}
	c := chunkfmt.ChunkView(chunk)
	start := c.StartNode()
	first := uint32(c.HeaderWords())
	for r, v := range nodes {
		b, e := c.Span(v - start)
		d := e - b
		for t := range k {
			i := r*k + t
			if d == 0 {
				out[i] = -1
				if edges != nil {
					edges[i] = -1
				}
				continue
			}
			w := b + rng.Candidate(key, walks[r], attempt0+uint32(t), d)
			out[i] = int32(chunk[w])
			if edges != nil {
				edges[i] = int32(w - first)
			}
		}
	}
	return nil
}
