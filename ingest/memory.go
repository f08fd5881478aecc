package ingest

import (
	"fmt"
	"runtime"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/internal/memavail"
	"github.com/streamsampler/streamsampler/internal/progress"
)

// bytesPerNode is the working memory Build needs for every node: the
// degree array (uint32) and the CSR offset array (uint64), both live
// while pass 1 turns degrees into offsets.
const bytesPerNode = 12

// writeBufSize mirrors the chunk writer's output buffer (chunkfmt).
const writeBufSize = 1 << 20

// buildMemory is the least working memory, in bytes, of a build of n
// nodes with the given adjacency entries and largest degree (0 where pass
// 1 has not counted them yet, which gives the least the build can need).
// It is the larger of two peaks plus the buffers every pass holds:
//
//   - end of pass 1: degrees and offsets, 12 bytes per node;
//   - passes 2 and 3: the offsets (8 bytes per node), the chunk being
//     built (chunkfmt.Writer holds one chunk's header and neighbors, at
//     most the chunk size, counted twice for slice growth), each sorting
//     worker's radix scratch (4 bytes per entry of the longest list, at
//     most radixMax entries), and the edges in memory: the smallest
//     partition an external build cuts, and its spill files' buffers
//     (partitionFloor).
//
// A build given more memory than this holds larger partitions, up to all
// the edges (edgeMemory); the rest of the edges wait in spill files.
func buildMemory(n, entries uint64, maxDegree uint32, chunkSize int64, workers int) int64 {
	pass1, pass3 := memoryPeaks(n, entries, maxDegree, chunkSize, workers)
	return max(pass1, pass3+partitionFloor(entries, maxDegree)) + buildBuffers(workers)
}

// memoryPeaks is buildMemory's two peaks without the edges and buffers.
func memoryPeaks(n, entries uint64, maxDegree uint32, chunkSize int64, workers int) (pass1, pass3 int64) {
	n1 := int64(n) + 1
	pass1 = bytesPerNode * n1
	chunk := 2*min(chunkSize, 4*(int64(entries)+n1+chunkfmt.MinHeaderWords)) + writeBufSize
	var scratch int64
	if maxDegree >= radixMin {
		scratch = int64(workers) * 4 * int64(min(int(maxDegree), radixMax))
	}
	return pass1, 8*n1 + chunk + scratch
}

// buildBuffers is the memory of the fixed-size buffers: input reading and
// spooling, pass 2's batches (the scatterer's, one part per worker, and
// the spool decoding), and pass 3's window lengths.
func buildBuffers(workers int) int64 {
	w := int64(workers)
	read := int64(4 * readBufSize)
	place := (w+2)*w*(2*buildBatch/w*9/8+64)*4 + 8*buildBatch + 8*buildBatch
	windows := (2*w + 2) * 2 * 4 << 16
	spill := int64(spillReadBuf + spillReadBuf + 2*8*buildBatch) // pass 3's spill reading; the router's batch
	return read + place + windows + spill
}

// uncheckedEdgeMemory is the memory for edges of a build whose budget is
// unchecked: 1 GiB, 256 Mi entries.
const uncheckedEdgeMemory = 1 << 30

// memoryBudget is a build's limit on buildMemory: the caller's, else the
// memory available when the build starts; 0 means unchecked (unknown).
func memoryBudget(o BuildOptions) int64 {
	if o.Memory > 0 {
		return o.Memory
	}
	return memavail.Available()
}

// memoryCheck refuses a build whose working memory exceeds its budget.
type memoryCheck struct {
	budget    int64 // 0: unchecked
	chunkSize int64
	workers   int
}

func newMemoryCheck(o BuildOptions) memoryCheck {
	return memoryCheck{budget: memoryBudget(o), chunkSize: o.ChunkSize, workers: max(1, runtime.GOMAXPROCS(0))}
}

// need is buildMemory for this build.
func (c memoryCheck) need(n, entries uint64, maxDegree uint32) int64 {
	return buildMemory(n, entries, maxDegree, c.chunkSize, c.workers)
}

// edgeMemory is the memory, in bytes, that a build of n nodes with the
// given entries and largest degree can give to its edges within the
// budget: what is left after the offsets, the chunk being written, the
// sorting scratch and the buffers. Past check, it is at least
// partitionFloor. Where the budget is unchecked (the machine's memory is
// unknown) it is uncheckedEdgeMemory, so that a large graph is still
// built out of core.
func (c memoryCheck) edgeMemory(n, entries uint64, maxDegree uint32) int64 {
	if c.budget == 0 {
		return max(uncheckedEdgeMemory, partitionFloor(entries, maxDegree))
	}
	_, pass3 := memoryPeaks(n, entries, maxDegree, c.chunkSize, c.workers)
	return max(c.budget-pass3-buildBuffers(c.workers), partitionFloor(entries, maxDegree))
}

// check returns an error wrapping ErrMemoryBudget when a graph of n nodes
// (with the entries and largest degree known so far) needs more than the
// budget; what says where n comes from ("--num-nodes 2147483647", "node id
// 7 in g.txt") and fix how to change it.
func (c memoryCheck) check(n, entries uint64, maxDegree uint32, what, fix string) error {
	need := c.need(n, entries, maxDegree)
	if c.budget == 0 || need <= c.budget {
		return nil
	}
	return fmt.Errorf("build: %s: %w: a graph of %d nodes needs about %s of working memory (%d bytes per node for the degree and offset arrays, %s for buffers, the chunk being written and the edges held in memory), more than the budget of %s (--memory); %s, or raise --memory if the machine has that much to spare",
		what, ErrMemoryBudget, n, progress.Bytes(need), bytesPerNode, progress.Bytes(need-bytesPerNode*(int64(n)+1)), progress.Bytes(c.budget), fix)
}

// maxNodes is the largest node count whose pass-1 working memory fits
// the budget (chunkfmt.MaxNodes when unchecked): pass 1 grows its degree
// array up to it, never beyond, so that doubling the array cannot
// overshoot a budget that the final count fits.
func (c memoryCheck) maxNodes() uint64 {
	if c.budget == 0 {
		return chunkfmt.MaxNodes
	}
	lo, hi := uint64(0), uint64(chunkfmt.MaxNodes)
	for lo < hi {
		m := (lo + hi + 1) / 2
		if c.need(m, 0, 0) <= c.budget {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return lo
}
