package hls

import (
	"fmt"
	"math"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// The kernel's copy-all mode (fanout -1, every neighbor; DESIGN §3, "Full
// neighborhoods"): selected by the fanout argument FanoutAll, it copies
// every target's adjacency in CSR order into a CSR-shaped result, as many
// neighbors as the launch's capacity allows, and says where it stopped
// (sample_kernel.h gives the layout). The host launches again from there
// until every target is done, so no row, however long, has to fit one
// buffer.

// FanoutAll is the fanout argument (argument 4) of a copy-all launch:
// FANOUT_ALL in sample_kernel.h, -1 as a uint32.
const FanoutAll = math.MaxUint32

// AllStatusWords is the words before the counts in a copy-all result
// buffer (ALL_STATUS_WORDS): the stop target and the resume position.
const AllStatusWords = 2

// AllResultWords is the int32 words a copy-all launch over nTargets
// targets with room for capacity neighbors writes into its result buffer:
// the status, a count per target, the neighbors and, with edges, their
// edge indices.
func AllResultWords(nTargets, capacity int, edges bool) int {
	n := AllStatusWords + nTargets + capacity
	if edges {
		n += capacity
	}
	return n
}

// AllKey is the key argument of a copy-all launch: (capacity << 32) |
// skip. The mode draws no random numbers, so the key carries the launch's
// capacity and the position in targets[0]'s adjacency it starts at.
func AllKey(capacity int, skip uint32) uint64 { return uint64(uint32(capacity))<<32 | uint64(skip) }

// AllProgress is where a copy-all launch stopped: Stop is the first target
// it did not finish (len(targets) when it finished all), Resume the
// position in that target's adjacency to go on from (0 when all are done),
// Words the neighbors it wrote.
type AllProgress struct {
	Stop   int
	Resume uint32
	Words  int
}

// Done reports whether the launch finished all n targets.
func (p AllProgress) Done(n int) bool { return p.Stop >= n }

// validateAll checks what the copy-all mode trusts: the chunk and the
// targets as validate does, one count per target, the edge output (nil
// or as long as out), targets and a capacity that fit the int32 status and
// counts, a capacity of at least one neighbor, and skip within
// targets[0]'s degree.
func validateAll(chunk, targets []uint32, skip uint32, counts, out, edges []int32) error {
	if len(counts) != len(targets) {
		return fmt.Errorf("%w: %d counts for %d targets", ErrBadOutput, len(counts), len(targets))
	}
	if edges != nil && len(edges) != len(out) {
		return fmt.Errorf("%w: len(edges) = %d, want len(out) = %d", ErrBadOutput, len(edges), len(out))
	}
	// The status and the counts are int32 words.
	if int64(len(out)) > math.MaxInt32 || int64(len(targets)) > math.MaxInt32 {
		return fmt.Errorf("%w: %d targets and a capacity of %d neighbors, at most %d each per launch", ErrBadOutput, len(targets), len(out), math.MaxInt32)
	}
	if len(targets) == 0 {
		return nil
	}
	if len(out) == 0 {
		return fmt.Errorf("%w: a copy-all launch needs room for at least one neighbor", ErrBadOutput)
	}
	if err := validateChunk(chunk, targets, edges != nil); err != nil {
		return err
	}
	c := chunkfmt.ChunkView(chunk)
	b, e := c.Span(targets[0] - c.StartNode())
	if skip > e-b {
		return fmt.Errorf("%w: skip %d past node %d's %d neighbors", ErrBadOutput, skip, targets[0], e-b)
	}
	return nil
}

// ReferenceAll is the copy-all mode in Go, the definition RunAll is
// tested against: for r = 0, 1, …, targets[r]'s neighbors (from position
// skip for r = 0) are appended to out, and counts[r] set to how many,
// until out is full; with edges (as long as out) each neighbor's
// chunk-local edge index too. Counts past the stop are 0. It validates its
// inputs as RunAll does and allocates nothing.
func ReferenceAll(chunk, targets []uint32, skip uint32, counts, out, edges []int32) (AllProgress, error) {
	if err := validateAll(chunk, targets, skip, counts, out, edges); err != nil {
		return AllProgress{}, err
	}
	p := AllProgress{Stop: len(targets)}
	if len(targets) == 0 {
		return p, nil
	}
	c := chunkfmt.ChunkView(chunk)
	start := c.StartNode()
	first := uint32(c.HeaderWords())
	clear(counts)
	for r, t := range targets {
		b, e := c.Span(t - start)
		p0 := b
		if r == 0 {
			p0 = b + skip
		}
		take := min(int(e-p0), len(out)-p.Words)
		for i := range take {
			w := p0 + uint32(i)
			out[p.Words+i] = int32(chunk[w])
			if edges != nil {
				edges[p.Words+i] = int32(w - first)
			}
		}
		counts[r] = int32(take)
		p.Words += take
		if take < int(e-p0) {
			p.Stop, p.Resume = r, p0+uint32(take)-b
			return p, nil
		}
	}
	return p, nil
}

// splitAll cuts a copy-all result buffer of the given layout into its
// parts: status, counts, neighbors, edge indices (nil without edges).
func splitAll(result []int32, nTargets, capacity int, edges bool) (status, counts, out, eout []int32, err error) {
	if need := AllResultWords(nTargets, capacity, edges); len(result) < need {
		return nil, nil, nil, nil, fmt.Errorf("%w: copy-all result of %d words, want %d (%d targets, capacity %d, edges %v)",
			ErrBadOutput, len(result), need, nTargets, capacity, edges)
	}
	status = result[:AllStatusWords]
	counts = result[AllStatusWords : AllStatusWords+nTargets]
	out = result[AllStatusWords+nTargets : AllStatusWords+nTargets+capacity]
	if edges {
		eout = result[AllStatusWords+nTargets+capacity : AllStatusWords+nTargets+2*capacity]
	}
	return status, counts, out, eout, nil
}

// ReferenceAllRaw is ReferenceAll over one result buffer laid out as the
// kernel's (sample_kernel.h: status, counts, neighbors, edge indices),
// what RunAllRaw is without cgo.
func ReferenceAllRaw(chunk, targets []uint32, result []int32, capacity int, skip uint32, edges bool) error {
	status, counts, out, eout, err := splitAll(result, len(targets), capacity, edges)
	if err != nil {
		return err
	}
	p, err := ReferenceAll(chunk, targets, skip, counts, out, eout)
	if err != nil {
		return err
	}
	status[0], status[1] = int32(p.Stop), int32(p.Resume)
	return nil
}

// ParseAllStatus reads a copy-all result buffer's status words and checks
// them against its counts: stop within the targets, the counts' sum within
// the capacity. A device whose words disagree is reported, not trusted
// (the host reads the neighbors by these numbers).
func ParseAllStatus(status, counts []int32, capacity int) (AllProgress, error) {
	if len(status) < AllStatusWords {
		return AllProgress{}, fmt.Errorf("%w: %d status words", ErrBadOutput, len(status))
	}
	p := AllProgress{Stop: int(status[0]), Resume: uint32(status[1])}
	if p.Stop < 0 || p.Stop > len(counts) {
		return AllProgress{}, fmt.Errorf("%w: copy-all stop %d outside the %d targets", ErrBadOutput, status[0], len(counts))
	}
	if p.Stop == len(counts) && p.Resume != 0 {
		return AllProgress{}, fmt.Errorf("%w: copy-all finished all %d targets with resume position %d", ErrBadOutput, len(counts), p.Resume)
	}
	for r, n := range counts {
		if n < 0 || (r > p.Stop && n != 0) {
			return AllProgress{}, fmt.Errorf("%w: copy-all count %d for target %d (stop %d)", ErrBadOutput, n, r, p.Stop)
		}
		p.Words += int(n)
	}
	if p.Words > capacity {
		return AllProgress{}, fmt.Errorf("%w: copy-all counts sum to %d, past the capacity %d", ErrBadOutput, p.Words, capacity)
	}
	return p, nil
}
