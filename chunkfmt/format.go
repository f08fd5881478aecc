package chunkfmt

import (
	"errors"
	"fmt"
	"math"
)

// FormatVersion is the manifest version this package writes and the only
// one it reads.
const FormatVersion = 1

// DefaultChunkSize is the chunk size chunkify uses unless told otherwise:
// 512 MiB, 128 Mi words. Large chunks amortise a device transfer; the
// sampler streams only the chunks that hold frontier nodes.
const DefaultChunkSize = 512 << 20

// SectorSize is the alignment unit of the format. Chunk sizes are multiples
// of it and the last chunk is padded to it, so that every chunk can be read
// with O_DIRECT or a peer-to-peer DMA that moves whole sectors.
const SectorSize = 512

// MaxChunkSize is the largest chunk size: offsets inside a chunk are uint32
// word indices, so a chunk holds at most 2^32-1 words (rounded down to a
// whole sector).
const MaxChunkSize = (int64(math.MaxUint32) * 4) / SectorSize * SectorSize

// MaxNodes is the largest number of nodes a graph may have, the one limit
// that ingest, the Writer and manifest validation all check (DESIGN §2).
// Node ids are uint32 on disk, but samples are int32 with -1 for an empty
// slot, so ids must stay below 2^31-1: at most MaxNodes nodes, numbered
// 0..MaxNodes-1.
const MaxNodes = math.MaxInt32

// File names inside a graph directory.
const (
	ChunksFile   = "edges.chunks"
	IndexFile    = "chunks.info"
	ManifestFile = "manifest.json"
)

// Self-loop policies recorded in Options.SelfLoops.
const (
	SelfLoopsKeep = "keep"
	SelfLoopsDrop = "drop"
)

// Options records how the edge list was turned into adjacency. The writer
// enforces the ones that constrain adjacency lists (Dedup: strictly
// ascending neighbors; SelfLoops "drop": no node lists itself) and Verify
// checks them; the others are informational.
type Options struct {
	Symmetrize bool   `json:"symmetrize"`
	Reverse    bool   `json:"reverse"`
	Dedup      bool   `json:"dedup"`
	SelfLoops  string `json:"self_loops"` // "keep" or "drop"; "" means "keep" when writing
}

func (o *Options) normalize() error {
	switch o.SelfLoops {
	case "":
		o.SelfLoops = SelfLoopsKeep
	case SelfLoopsKeep, SelfLoopsDrop:
	default:
		return fmt.Errorf("self_loops %q: want %q or %q", o.SelfLoops, SelfLoopsKeep, SelfLoopsDrop)
	}
	return nil
}

var (
	// ErrNoManifest means a directory has no manifest.json: it is not a
	// graph (or its writer never finished).
	ErrNoManifest = errors.New("chunkfmt: no manifest (not a graph directory)")
	// ErrBadManifest means manifest.json exists but is not a valid
	// manifest of this format version.
	ErrBadManifest = errors.New("chunkfmt: invalid manifest")
	// ErrCorrupt is matched (errors.Is) by every *DefectError: the files
	// disagree with the manifest or with the format's invariants.
	ErrCorrupt = errors.New("chunkfmt: corrupt graph")
	// ErrBadAdjacency is wrapped by Writer.Append when an adjacency list
	// is unsorted, has duplicates under Dedup, a self-loop under "drop",
	// or an id not below the number of nodes.
	ErrBadAdjacency = errors.New("chunkfmt: invalid adjacency")
	// ErrNodeTooLarge is matched (errors.Is) by *NodeTooLargeError.
	ErrNodeTooLarge = errors.New("chunkfmt: node adjacency does not fit in a chunk")
	// ErrClosed is returned by a Writer used after Close or Abort.
	ErrClosed = errors.New("chunkfmt: writer closed")
)

// NodeTooLargeError reports a node whose adjacency cannot fit even in an
// empty chunk. MinChunkSize is the smallest valid chunk size that would
// hold it.
type NodeTooLargeError struct {
	Node         uint32
	Degree       int
	ChunkSize    int64
	MinChunkSize int64
}

func (e *NodeTooLargeError) Error() string {
	if e.MinChunkSize > MaxChunkSize {
		return fmt.Sprintf("chunkfmt: node %d has degree %d: too large for a chunk of %d bytes, and for any chunk (max %d bytes)",
			e.Node, e.Degree, e.ChunkSize, int64(MaxChunkSize))
	}
	return fmt.Sprintf("chunkfmt: node %d has degree %d: does not fit in a chunk of %d bytes; the smallest chunk size that fits is %d bytes",
		e.Node, e.Degree, e.ChunkSize, e.MinChunkSize)
}

// Is makes errors.Is(err, ErrNodeTooLarge) true.
func (e *NodeTooLargeError) Is(target error) bool { return target == ErrNodeTooLarge }

// headerWords is the size in words of the header of a chunk holding n
// nodes: n_nodes, start_node and the n+1 offsets.
func headerWords(n uint64) uint64 { return MinHeaderWords + n }

// roundUp rounds x up to a multiple of SectorSize.
func roundUp(x int64) int64 { return (x + SectorSize - 1) / SectorSize * SectorSize }

// MinChunkSizeFor is the smallest valid chunk size whose empty chunk holds
// one node of the given degree.
func MinChunkSizeFor(degree int) int64 {
	return roundUp(int64(headerWords(1)+uint64(degree)) * 4)
}

// checkChunkSize reports whether chunkSize is usable by the format.
func checkChunkSize(chunkSize int64) error {
	if chunkSize <= 0 || chunkSize%SectorSize != 0 {
		return fmt.Errorf("chunk size %d: must be a positive multiple of %d bytes", chunkSize, SectorSize)
	}
	if chunkSize > MaxChunkSize {
		return fmt.Errorf("chunk size %d: larger than the maximum %d bytes (offsets are uint32 words)", chunkSize, int64(MaxChunkSize))
	}
	return nil
}

// sortedBelow reports, without a branch per element, whether a is sorted
// ascending (strictly when strict) with every id below n. A failure is
// then located by a slower scan that names the first defect.
func sortedBelow(a []uint32, strict bool, n uint32) bool {
	if len(a) == 0 {
		return true
	}
	var s int64
	if strict {
		s = 1
	}
	// acc collects the sign bits of every a[i]-a[i-1]-s: negative iff
	// some pair is out of order.
	var acc int64
	prev := int64(a[0])
	for _, v := range a[1:] {
		acc |= int64(v) - prev - s
		prev = int64(v)
	}
	return acc >= 0 && a[len(a)-1] < n
}
