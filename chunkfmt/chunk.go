package chunkfmt

// ChunkView reads the header of one chunk held in memory as words (from
// Words or Reader.ChunkWords; FORMAT.md):
//
//	[n_nodes][start_node][off_0 … off_n_nodes][neighbors…]
//
// where off_j is the word index, inside the chunk, of node start_node+j's
// first neighbor and off_n_nodes is one past the last neighbor. It is the
// one place outside the Writer and VerifyChunk that knows this layout.
//
// The accessors index the slice and check nothing else: a chunk from an
// untrusted file is checked first (VerifyChunk, or the sampling kernel's
// own check of the targets it reads).
type ChunkView []uint32

// MinHeaderWords is the header of a chunk with no nodes: n_nodes,
// start_node and off_0. A chunk of n nodes has MinHeaderWords+n.
const MinHeaderWords = 3

// NumNodes is n_nodes, the number of nodes whose adjacency the chunk holds.
func (c ChunkView) NumNodes() uint32 { return c[0] }

// StartNode is start_node, the first of the chunk's consecutive nodes.
func (c ChunkView) StartNode() uint32 { return c[1] }

// HeaderWords is the header's size in words, where the neighbors begin
// (off_0 of a valid chunk).
func (c ChunkView) HeaderWords() uint64 { return headerWords(uint64(c[0])) }

// Span returns the word range [lo, hi) of the neighbors of the chunk's
// j-th node (node StartNode()+j), j < NumNodes().
func (c ChunkView) Span(j uint32) (lo, hi uint32) { return c[2+j], c[3+j] }

// Neighbors returns the adjacency of the chunk's j-th node, a sub-slice
// of c.
func (c ChunkView) Neighbors(j uint32) []uint32 { return c[c[2+j]:c[3+j]] }
