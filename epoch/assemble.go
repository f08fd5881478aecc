package epoch

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

var (
	// ErrNotInFrontier is wrapped by Sample when a seed is not in frontier_0
	// (not a training node of this epoch's shard), or, for a corrupt Result,
	// when a node reached at hop h is missing from frontier_{h-1}.
	ErrNotInFrontier = errors.New("epoch: node not in frontier")
	// ErrDuplicateSeed is wrapped by Sample when a seed appears twice in one
	// minibatch: DGL's blocks need distinct destination nodes.
	ErrDuplicateSeed = errors.New("epoch: duplicate seed")
)

// Hop is one hop of a minibatch: the nodes it expands (Dst), the edges
// from their samples, and every node known after it (Src). Edges are
// ordered by destination, then by sample slot; they run from Src to Dst in
// local ids.
//
// With DGL semantics a Hop is a message-passing block (DGL's to_block):
// Dst is the previous hop's Src (the seeds at hop 1), Src begins with Dst
// in order, then the new neighbors in order of first appearance. With PyG
// semantics Dst is the nodes first reached at the previous hop (the seeds
// at hop 1), which are Src[lo:lo+len(Dst)] for lo = len(previous Src) -
// len(Dst); Src is again the previous Src followed by the new neighbors.
// In both, each hop's Src extends the previous one, and the last is the
// minibatch's node list (PyG's n_id).
type Hop struct {
	Dst     []uint32 `json:"dst"`      // global ids of the nodes this hop expands
	Src     []uint32 `json:"src"`      // global ids of every node known after this hop
	EdgeSrc []int32  `json:"edge_src"` // local index into Src of each edge's source (the sampled neighbor)
	EdgeDst []int32  `json:"edge_dst"` // local index into Dst of each edge's destination
	// EdgeIDs holds each edge's position in the stored CSR (Layer.EdgeIDs),
	// or is nil when the epoch was sampled without edge ids.
	EdgeIDs []int64 `json:"e_id,omitempty"`
}

// Blocks is one assembled minibatch: Hops[0] is hop 1 (its Dst are the
// seeds); with DGL semantics Hops[h+1].Dst == Hops[h].Src. Slices may
// share backing arrays (Seeds with Hops[0].Dst, each Src with the next
// Dst); treat them as read-only.
type Blocks struct {
	Epoch     uint32    `json:"epoch"`
	Semantics Semantics `json:"-"` // in JSON as "semantics":"pyg", only for PyG
	Seeds     []uint32  `json:"seeds"`
	Hops      []Hop     `json:"hops"`
}

// HasEdgeIDs reports whether the hops carry edge ids.
func (b *Blocks) HasEdgeIDs() bool { return len(b.Hops) > 0 && b.Hops[0].EdgeIDs != nil }

// Nodes returns every node of the minibatch, the rows its features need:
// the last hop's src (the seeds first, then each hop's new nodes: PyG's
// n_id), or the seeds without hops.
func (b *Blocks) Nodes() []uint32 {
	if len(b.Hops) == 0 {
		return b.Seeds
	}
	return b.Hops[len(b.Hops)-1].Src
}

// NumEdges returns the number of edges over all hops.
func (b *Blocks) NumEdges() int {
	n := 0
	for i := range b.Hops {
		n += len(b.Hops[i].EdgeSrc)
	}
	return n
}

// MarshalJSON writes {"epoch":N,"seeds":[…],"hops":[{"dst":[…],"src":[…],
// "edge_src":[…],"edge_dst":[…]},…]}, with [] for empty slices, faster than
// reflection for the long integer arrays of a minibatch.
func (b Blocks) MarshalJSON() ([]byte, error) { return b.AppendJSON(nil), nil }

// AppendJSON appends the JSON encoding of b (see MarshalJSON) to dst.
func (b *Blocks) AppendJSON(dst []byte) []byte { return append(b.AppendJSONFields(dst), '}') }

// AppendJSONFields is AppendJSON without the object's closing brace, so
// that a writer can add its own fields after "hops" (sample --features
// adds the rows): the one encoding of Blocks.
func (b *Blocks) AppendJSONFields(dst []byte) []byte {
	dst = append(dst, `{"epoch":`...)
	dst = strconv.AppendUint(dst, uint64(b.Epoch), 10)
	if b.Semantics != DGL {
		dst = append(dst, `,"semantics":"`...)
		dst = append(dst, b.Semantics.String()...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"seeds":`...)
	dst = appendInts(dst, b.Seeds)
	dst = append(dst, `,"hops":[`...)
	for i := range b.Hops {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = b.Hops[i].AppendJSON(dst)
	}
	return append(dst, ']')
}

// MarshalJSON writes {"dst":[…],"src":[…],"edge_src":[…],"edge_dst":[…]},
// with "e_id":[…] after them when the hop has edge ids.
func (h Hop) MarshalJSON() ([]byte, error) { return h.AppendJSON(nil), nil }

// AppendJSON appends the JSON encoding of h to dst.
func (h *Hop) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"dst":`...)
	dst = appendInts(dst, h.Dst)
	dst = append(dst, `,"src":`...)
	dst = appendInts(dst, h.Src)
	dst = append(dst, `,"edge_src":`...)
	dst = appendInts(dst, h.EdgeSrc)
	dst = append(dst, `,"edge_dst":`...)
	dst = appendInts(dst, h.EdgeDst)
	if h.EdgeIDs != nil {
		dst = append(dst, `,"e_id":`...)
		dst = appendInts(dst, h.EdgeIDs)
	}
	return append(dst, '}')
}

// appendInts appends a as a JSON array of integers (both element types
// convert to int64 exactly).
func appendInts[T uint32 | int32 | int64](dst []byte, a []T) []byte {
	dst = append(dst, '[')
	for i, v := range a {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(v), 10)
	}
	return append(dst, ']')
}

// Assemble assembles the blocks of one minibatch (DESIGN §5) with the
// given semantics. It is a convenience over a fresh Assembler with binary
// search; loops should keep an Assembler (or use pipeline.Store) to reuse
// its scratch space.
func (r *Result) Assemble(seeds []uint32, sem Semantics) (*Blocks, error) {
	return NewAssembler(r, nil).Assemble(seeds, sem)
}

// Assembler turns seed lists into Blocks for one Result, reusing its
// scratch space (the relabelling tables, edge buffers) from call to call.
// It is not safe for concurrent use; use one per goroutine (they may share
// the Result and the Index).
type Assembler struct {
	r  *Result
	ix *Index
	// The relabelling strategies (relabel.go); each hop uses one.
	hash   localTable
	dense  denseTable
	bySort sortRelabel
	batch  batchTable
	// inBatch: the batch table holds this minibatch's nodes so far.
	inBatch bool
	// The hop's dst sorted by node id (rows.go), for mergeRows and bySort.
	dstByID dstOrder
	// The nodes a PyG hop expands, sorted by id (rows.go): a part of
	// known, so it cannot share dstByID, which the relabelling uses.
	expandByID dstOrder
	// One hop's arrays, reused (Sample copies them into the Hop):
	rowBuf  []int32  // each dst node's row in the layer (rows)
	blkBuf  []uint32 // rankRows' prefetch offsets
	sampled []uint32 // the valid samples of those rows, in edge order (gather)
	edgeDst []int32  // each edge's destination, as an index into dst (gather)
	edgeSrc []int32  // each edge's source, as a local id (relabel)
	src     []uint32 // dst, then the new nodes in order of first appearance
	nodes   []uint32 // NodeSet's copy of a hop's src, the next hop's dst
	sink    uint64   // what gather's prefetching loads were or'ed into
	// exclude, during AssembleLink, is the sorted edge ids dropped from
	// every hop (nil otherwise).
	exclude []int64
}

// NewAssembler returns an Assembler over r; ix (from r.Index or
// r.MapIndex) may be nil, and then each row is found by binary search.
func NewAssembler(r *Result, ix *Index) *Assembler {
	return &Assembler{r: r, ix: ix}
}

// Result returns the Result the Assembler reads.
func (a *Assembler) Result() *Result { return a.r }

// Reset points the Assembler at another Result (and its index, or nil),
// keeping its scratch space.
func (a *Assembler) Reset(r *Result, ix *Index) { a.r, a.ix = r, ix }

// Assemble assembles the blocks of one minibatch: for hop h = 1..L, the
// nodes it expands (dst: with DGL semantics the seeds at hop 1, then the
// previous hop's src; with PyG semantics the seeds at hop 1, then the
// nodes first reached at the previous hop), src (the previous hop's src,
// the seeds at hop 1, then new neighbors in order of first appearance)
// and the edges from each dst node's valid samples in layer h-1, by dst
// and then sample slot, with their edge ids when the layer has them.
// Seeds must be distinct members of frontier_0; otherwise the error wraps
// ErrDuplicateSeed or ErrNotInFrontier and names the node.
//
// Each hop is three passes rather than one: the rows of all dst nodes
// (rows.go), then their valid samples gathered in edge order (gather.go),
// then the relabelling of the samples' nodes to local ids (relabel.go).
// Each pass's random accesses are independent of each other, so the CPU
// overlaps their cache misses (about 2× faster than one fused loop on a
// 1M-node epoch; BenchmarkSample).
func (a *Assembler) Assemble(seeds []uint32, sem Semantics) (*Blocks, error) {
	if !sem.Valid() {
		return nil, fmt.Errorf("%w: %v", ErrConfig, sem)
	}
	r := a.r
	b := &Blocks{Epoch: r.Key.Epoch, Semantics: sem, Seeds: clone(seeds), Hops: make([]Hop, len(r.Layers))}
	if _, err := a.assemble(b.Seeds, sem, b); err != nil {
		return nil, err
	}
	return b, nil
}

// NodeSet returns the nodes of the minibatch of seeds under sem: the last
// hop's src of Assemble(seeds, sem) (the seeds first, then every node in
// order of first appearance, hop by hop: PyG's n_id), appended to dst,
// without the blocks' edges or per-hop copies. It is what a minibatch
// needs feature rows for, and costs the relabelling alone.
func (a *Assembler) NodeSet(seeds []uint32, sem Semantics, dst []uint32) ([]uint32, error) {
	if !sem.Valid() {
		return dst, fmt.Errorf("%w: %v", ErrConfig, sem)
	}
	nodes, err := a.assemble(seeds, sem, nil)
	if err != nil {
		return dst, err
	}
	return append(dst, nodes...), nil
}

// assemble runs Assemble's hops from seeds; with b it fills b's hops, and
// it returns the last hop's src (in a's scratch space when b is nil,
// valid until a's next use).
//
// Both semantics are one loop: known holds every node so far (the
// previous hop's src), expand the nodes this hop samples. The relabelling
// starts each hop from known, so a node's local id is its position in
// the minibatch's n_id under both; only the rows gathered differ (DGL:
// all of known; PyG: the part of known the previous hop added).
func (a *Assembler) assemble(seeds []uint32, sem Semantics, b *Blocks) ([]uint32, error) {
	r := a.r
	if len(r.Layers) == 0 {
		if err := a.checkSeeds(seeds); err != nil {
			return nil, err
		}
		return seeds, nil
	}
	known, expand := seeds, seeds
	for h := range r.Layers {
		ly := &r.Layers[h]
		a.dstByID.forget()
		a.expandByID.forget()
		order := &a.dstByID
		if len(expand) != len(known) {
			order = &a.expandByID
		}
		// The relabelling is chosen by the hop's samples, at most
		// len(expand)·fanout; a full layer's rows are as long as their
		// nodes' degrees, so its rows are found first and their lengths
		// summed (the batch table must know its 24-bit ids suffice).
		var rows []int32
		maxEdges := len(expand) * ly.Fanout
		if ly.Full() {
			var err error
			if rows, err = a.rows(h, expand, order); err != nil {
				return nil, err
			}
			maxEdges = fullEdges(ly.Offsets, rows)
		}
		relabeler := a.relabelerFor(h, len(known), maxEdges)
		if bad, repeated := relabeler.begin(h, known); bad >= 0 {
			switch {
			case !repeated:
				return nil, a.notInFrontier(h, bad, known[bad])
			case h == 0:
				return nil, fmt.Errorf("%w: seed %d at positions %d and %d", ErrDuplicateSeed, known[bad], a.firstPos(seeds, known[bad]), bad)
			default:
				return nil, fmt.Errorf("epoch: internal error: node %d twice among hop %d destinations", known[bad], h+1)
			}
		}
		if !ly.Full() {
			var err error
			if rows, err = a.rows(h, expand, order); err != nil {
				return nil, err
			}
		}
		maxEdges++ // gather's branch-free copy writes one slot past the last edge
		sampled := slices.Grow(a.sampled[:0], maxEdges)[:maxEdges]
		edgeDst := slices.Grow(a.edgeDst[:0], maxEdges)[:maxEdges]
		var numEdges int
		if ly.Full() {
			numEdges = gatherFull(sampled, edgeDst, ly.Samples, ly.Offsets, rows)
		} else {
			numEdges = a.gather(sampled, edgeDst, ly.Samples, rows, ly.Fanout)
		}
		sampled, edgeDst = sampled[:numEdges], edgeDst[:numEdges]
		var kept []int64 // the edge ids left after exclusion (link minibatches)
		if a.exclude != nil {
			if ly.Full() {
				kept = gatherFullEdgeIDs(make([]int64, 0, numEdges), ly.EdgeIDs, ly.Offsets, rows)
			} else {
				kept = gatherEdgeIDs(make([]int64, 0, numEdges), ly.Samples, ly.EdgeIDs, rows, ly.Fanout)
			}
			numEdges = a.dropExcluded(sampled, edgeDst, kept)
			sampled, edgeDst, kept = sampled[:numEdges], edgeDst[:numEdges], kept[:numEdges:numEdges]
		}
		edgeSrc := slices.Grow(a.edgeSrc[:0], numEdges)[:numEdges]
		src, bad := relabeler.relabel(append(a.src[:0], known...), sampled, edgeSrc)
		if bad >= 0 {
			return nil, fmt.Errorf("%w: sample %d of node %d at hop %d is beyond the index's %d nodes", ErrNotInFrontier, sampled[bad], expand[edgeDst[bad]], h+1, a.ix.numNodes)
		}
		a.sampled, a.edgeDst, a.edgeSrc, a.src = sampled, edgeDst, edgeSrc, src
		lo := len(known)
		if b == nil {
			// The next hop's known is this hop's src; a.src is reused for
			// the next src, so known lives in a second buffer.
			a.nodes = append(a.nodes[:0], src...)
			known = a.nodes
		} else {
			hop := &b.Hops[h]
			hop.Dst = expand
			hop.Src, hop.EdgeSrc, hop.EdgeDst = clone(src), clone(edgeSrc), clone(edgeDst)
			switch {
			case kept != nil:
				hop.EdgeIDs = kept
			case ly.EdgeIDs != nil && ly.Full():
				hop.EdgeIDs = gatherFullEdgeIDs(make([]int64, 0, numEdges), ly.EdgeIDs, ly.Offsets, rows)
			case ly.EdgeIDs != nil:
				hop.EdgeIDs = gatherEdgeIDs(make([]int64, 0, numEdges), ly.Samples, ly.EdgeIDs, rows, ly.Fanout)
			}
			known = hop.Src
		}
		if sem == PyG {
			expand = known[lo:]
		} else {
			expand = known
		}
	}
	return known, nil
}

// clone returns a copy of s, never nil. Appending to an empty slice
// allocates without clearing what the copy overwrites, where
// append(make(…, 0, n), s...) cleared it first: a minibatch's hops are
// megabytes, written twice.
func clone[T uint32 | int32](s []T) []T { return append([]T{}, s...) }

// checkSeeds checks the seeds of a Result without layers: they must be
// distinct training nodes.
func (a *Assembler) checkSeeds(seeds []uint32) error {
	a.hash.reset(len(seeds))
	for i, v := range seeds {
		if _, ok := search(a.r.Final, v); !ok {
			return fmt.Errorf("%w: seed %d (position %d) is not a training node of epoch %d", ErrNotInFrontier, v, i, a.r.Key.Epoch)
		}
		if _, fresh := a.hash.insert(v, int32(i)); !fresh {
			return fmt.Errorf("%w: seed %d at positions %d and later %d", ErrDuplicateSeed, v, a.firstPos(seeds, v), i)
		}
	}
	return nil
}

func (a *Assembler) notInFrontier(h, i int, v uint32) error {
	if h == 0 {
		return fmt.Errorf("%w: seed %d (position %d) is not a training node of epoch %d", ErrNotInFrontier, v, i, a.r.Key.Epoch)
	}
	return fmt.Errorf("%w: node %d of hop %d is missing from frontier %d of epoch %d (corrupt result)", ErrNotInFrontier, v, h+1, h, a.r.Key.Epoch)
}

func (a *Assembler) firstPos(seeds []uint32, v uint32) int {
	for i, s := range seeds {
		if s == v {
			return i
		}
	}
	return -1
}
