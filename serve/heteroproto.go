package serve

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/heteroepoch"
)

// batchHetero is minibatch flag bit 3: a heterogeneous minibatch
// (docs/PROTOCOL.md "Heterogeneous minibatches"). After the flags byte
// come u16 T and u16 R (the epoch_info schema's node type and relation
// counts), then the PyG section (flag bit 0) or the DGL blocks.
const batchHetero uint8 = 1 << 3

// batchHeteroX is minibatch flag bit 4, only with bit 3: feature rows
// follow the section, per node type u8 present then, when 1, a 2-D array
// [rows, dim] of the type's store dtype, one row per node (PyG: n_id;
// DGL: the last hop's src nodes), in that order.
const batchHeteroX uint8 = 1 << 4

// batchHeteroY is minibatch flag bit 5, only with bit 3: labels follow
// (after the rows, when bit 4 is set too), per node type u8 present then,
// when 1, an i32 array [rows] in the rows of x (-1: no label).
const batchHeteroY uint8 = 1 << 5

// HeteroRows are one node type's feature rows in a heterogeneous
// minibatch: Rows holds len/(Dim·size) rows of DType (a Dtype constant).
type HeteroRows struct {
	DType uint8
	Dim   int
	Rows  []byte
	// read, set by the server's assembly instead of Rows, reads the rows
	// straight into the reply frame as MarshalHeteroBatch lays it out:
	// they are most of a reply, and a buffer of their own would be one
	// more copy of them (and one more allocation to clear).
	read func(dst []byte) error
}

// readRows reads the rows an assembly left to be read into the reply
// frame into Rows: for a caller of the Go API, which gets no frame.
func (b *HeteroBatch) readRows() error {
	for t, x := range b.X {
		if x == nil || x.read == nil {
			continue
		}
		rows := make([]byte, x.bytes(b.rowNodes(t)))
		if err := x.read(rows); err != nil {
			return err
		}
		x.Rows, x.read = rows, nil
	}
	return nil
}

// bytes returns the size of the rows of n nodes.
func (x *HeteroRows) bytes(n int) int {
	if x.read != nil {
		return n * x.Dim * dtypeSize(x.DType)
	}
	return len(x.Rows)
}

// HeteroBatch is a heterogeneous minibatch as it travels: exactly one of
// PyG (PyG semantics) and DGL (DGL semantics, hop 1 first) is set. Type
// and relation indices are positions in the epoch_info schema (the graph
// directory's hetero.json order).
type HeteroBatch struct {
	Epoch     uint32
	Index     int
	Semantics epoch.Semantics
	// Hops is the number of hops L (the fanout lists' length).
	Hops int
	// EdgeIDs reports whether the edges carry e_id.
	EdgeIDs bool
	PyG     *heteroepoch.PyGBatch
	DGL     []heteroepoch.DGLBlock
	// X are the feature rows per node type (nil: no rows travel; a nil
	// entry: the type has no store).
	X []*HeteroRows
	// Y are the labels per node type, in the rows of X (nil: no labels
	// travel; a nil entry: the type has none). -1 marks a node without
	// a label.
	Y [][]int32
}

// rowNodes returns the number of nodes of type t whose rows travel.
func (b *HeteroBatch) rowNodes(t int) int {
	if b.PyG != nil {
		return len(b.PyG.Nodes[t].NID)
	}
	return len(b.DGL[len(b.DGL)-1].SrcNID[t])
}

// heteroCounts returns b's node type and relation counts.
func (b *HeteroBatch) heteroCounts() (int, int) {
	if b.PyG != nil {
		return len(b.PyG.Nodes), len(b.PyG.Edges)
	}
	if len(b.DGL) > 0 {
		return len(b.DGL[0].DstNID), len(b.DGL[0].Edges)
	}
	return 0, 0
}

// wireSize is the size of b's reply frame as MarshalHeteroBatch lays it
// out (1-D arrays: a 10-byte header, 2-D: 18), so that the frame is
// allocated once: its rows are most of it, and a buffer grown by append
// would copy them several times over.
func (b *HeteroBatch) wireSize() int {
	const a1, a2 = 10, 18 // array headers
	n := HeaderSize + 14
	if b.Semantics == epoch.PyG && b.PyG != nil {
		for t := range b.PyG.Nodes {
			nd := &b.PyG.Nodes[t]
			n += a1 + 4*len(nd.NID) + a1 + 4*len(nd.NumSampledNodes) + 4
		}
		for r := range b.PyG.Edges {
			e := &b.PyG.Edges[r]
			n += a2 + 16*len(e.Row) + a1 + 4*len(e.NumSampledEdges)
			if b.EdgeIDs {
				n += a1 + 8*len(e.EID)
			}
		}
	} else if len(b.DGL) > 0 {
		for _, d := range b.DGL[0].DstNID {
			n += a1 + 4*len(d)
		}
		for h := range b.DGL {
			bl := &b.DGL[h]
			for _, src := range bl.SrcNID {
				n += a1 + 4*len(src)
			}
			for r := range bl.Edges {
				e := &bl.Edges[r]
				n += 2*a1 + 4*len(e.Src) + 4*len(e.Dst)
				if b.EdgeIDs {
					n += a1 + 8*len(e.EID)
				}
			}
		}
	}
	for t, x := range b.X {
		n++
		if x != nil {
			n += a2 + x.bytes(b.rowNodes(t))
		}
	}
	for _, y := range b.Y {
		n++
		if y != nil {
			n += a1 + 4*len(y)
		}
	}
	return n
}

func appendU32Array(dst []byte, a []uint32) []byte {
	dst = appendArrayHeader(dst, DtypeU32, len(a))
	for _, v := range a {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	return dst
}

func appendIntsAsU32(dst []byte, a []int) []byte {
	dst = appendArrayHeader(dst, DtypeU32, len(a))
	for _, v := range a {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
	}
	return dst
}

func appendI32Array(dst []byte, a []int32) []byte {
	dst = appendArrayHeader(dst, DtypeI32, len(a))
	for _, v := range a {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
	}
	return dst
}

func appendI64Array(dst []byte, a []int64) []byte {
	dst = appendArrayHeader(dst, DtypeI64, len(a))
	for _, v := range a {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}

// MarshalHeteroBatch lays out a heterogeneous minibatch reply frame
// (header included) for request id. It copies the arrays into one slice:
// a heterogeneous minibatch is many small arrays (two or three per type
// and relation), which a vector of buffers would not serve better.
func MarshalHeteroBatch(op uint8, id uint32, b *HeteroBatch) ([]byte, error) {
	T, R := b.heteroCounts()
	if T > math.MaxUint16 || R > math.MaxUint16 {
		return nil, fmt.Errorf("serve: heterogeneous minibatch of %d node types and %d relations: at most %d of each travel", T, R, math.MaxUint16)
	}
	if b.Hops < 0 || b.Hops > math.MaxUint8 {
		return nil, fmt.Errorf("serve: heterogeneous minibatch of %d hops", b.Hops)
	}
	out := make([]byte, HeaderSize, b.wireSize())
	out = binary.LittleEndian.AppendUint32(out, b.Epoch)
	out = binary.LittleEndian.AppendUint32(out, uint32(int32(b.Index)))
	flags := batchHetero
	if b.Semantics == epoch.PyG {
		flags |= batchPyG
	}
	if b.EdgeIDs {
		flags |= batchEdgeIDs
	}
	if b.X != nil {
		flags |= batchHeteroX
		if len(b.X) != T {
			return nil, fmt.Errorf("serve: heterogeneous minibatch with rows of %d node types for %d", len(b.X), T)
		}
	}
	if b.Y != nil {
		flags |= batchHeteroY
		if len(b.Y) != T {
			return nil, fmt.Errorf("serve: heterogeneous minibatch with labels of %d node types for %d", len(b.Y), T)
		}
	}
	out = append(out, uint8(b.Hops), flags)
	out = binary.LittleEndian.AppendUint16(out, uint16(T))
	out = binary.LittleEndian.AppendUint16(out, uint16(R))
	switch {
	case b.Semantics == epoch.PyG && b.PyG != nil:
		for t := range b.PyG.Nodes {
			n := &b.PyG.Nodes[t]
			out = appendU32Array(out, n.NID)
			out = appendIntsAsU32(out, n.NumSampledNodes)
			out = binary.LittleEndian.AppendUint32(out, uint32(n.BatchSize))
		}
		for r := range b.PyG.Edges {
			e := &b.PyG.Edges[r]
			out = appendArray2Header(out, DtypeI64, 2, len(e.Row))
			for _, v := range e.Row {
				out = binary.LittleEndian.AppendUint64(out, uint64(int64(v)))
			}
			for _, v := range e.Col {
				out = binary.LittleEndian.AppendUint64(out, uint64(int64(v)))
			}
			if b.EdgeIDs {
				out = appendI64Array(out, e.EID)
			}
			out = appendIntsAsU32(out, e.NumSampledEdges)
		}
	case b.Semantics == epoch.DGL && len(b.DGL) == b.Hops && b.Hops > 0:
		for t := range b.DGL[0].DstNID {
			out = appendU32Array(out, b.DGL[0].DstNID[t])
		}
		for h := range b.DGL {
			bl := &b.DGL[h]
			for t := range bl.SrcNID {
				out = appendU32Array(out, bl.SrcNID[t])
			}
			for r := range bl.Edges {
				e := &bl.Edges[r]
				out = appendI32Array(out, e.Src)
				out = appendI32Array(out, e.Dst)
				if b.EdgeIDs {
					out = appendI64Array(out, e.EID)
				}
			}
		}
	default:
		return nil, fmt.Errorf("serve: heterogeneous minibatch of semantics %v without its section", b.Semantics)
	}
	for t, x := range b.X {
		if x == nil {
			out = append(out, 0)
			continue
		}
		n := b.rowNodes(t)
		if size := dtypeSize(x.DType); size == 0 || x.Dim < 1 || x.bytes(n) != n*x.Dim*size {
			return nil, fmt.Errorf("serve: node type %d: %d bytes of rows of dtype %d, dim %d for %d nodes", t, x.bytes(n), x.DType, x.Dim, n)
		}
		out = append(out, 1)
		out = append(out, x.DType, 2)
		out = binary.LittleEndian.AppendUint64(out, uint64(n))
		out = binary.LittleEndian.AppendUint64(out, uint64(x.Dim))
		// Little-endian already: the store's bytes.
		if x.read == nil {
			out = append(out, x.Rows...)
			continue
		}
		k, m := len(out), x.bytes(n)
		out = slices.Grow(out, m)[:k+m]
		if err := x.read(out[k:]); err != nil {
			return nil, err
		}
	}
	for t, y := range b.Y {
		if y == nil {
			out = append(out, 0)
			continue
		}
		if n := b.rowNodes(t); len(y) != n {
			return nil, fmt.Errorf("serve: node type %d: %d labels for %d nodes", t, len(y), n)
		}
		out = append(out, 1)
		out = appendI32Array(out, y)
	}
	binary.LittleEndian.PutUint32(out[0:], uint32(len(out)-4))
	out[4], out[5] = op, StatusOK
	binary.LittleEndian.PutUint32(out[6:], id)
	return out, nil
}

// IsHeteroBatch reports whether a minibatch reply payload is a
// heterogeneous minibatch (flag bit 3), so a client picks its decoder.
func IsHeteroBatch(p []byte) bool {
	return len(p) > 9 && p[9]&batchHetero != 0
}

// DecodeHeteroBatch decodes a heterogeneous minibatch reply payload
// against the epoch's schema (epoch_info's "hetero"): its type and
// relation counts must match, the arrays' lengths agree with each other
// (num_sampled_nodes sums to len(n_id), edge_index's entries index their
// types' n_id, a DGL hop's src starts with its dst).
func DecodeHeteroBatch(p []byte, s *heteroepoch.Schema) (*HeteroBatch, error) {
	d := &decoder{p: p}
	e, err := d.u32("epoch")
	if err != nil {
		return nil, err
	}
	bi, err := d.u32("batch index")
	if err != nil {
		return nil, err
	}
	nh, err := d.u8("hop count")
	if err != nil {
		return nil, err
	}
	flags, err := d.u8("minibatch flags")
	if err != nil {
		return nil, err
	}
	if flags&batchHetero == 0 || flags&^(batchPyG|batchEdgeIDs|batchHetero|batchHeteroX|batchHeteroY) != 0 {
		return nil, d.fail(fmt.Sprintf("heterogeneous minibatch flags %#x", flags))
	}
	if len(p)-d.off < 4 {
		return nil, d.fail("truncated type and relation counts")
	}
	T, R := int(binary.LittleEndian.Uint16(p[d.off:])), int(binary.LittleEndian.Uint16(p[d.off+2:]))
	if T != len(s.NodeTypes) || R != len(s.Relations) {
		return nil, d.fail(fmt.Sprintf("%d node types and %d relations for a schema of %d and %d", T, R, len(s.NodeTypes), len(s.Relations)))
	}
	d.off += 4
	L := int(nh)
	b := &HeteroBatch{Epoch: e, Index: int(int32(bi)), Hops: L, EdgeIDs: flags&batchEdgeIDs != 0, Semantics: epoch.DGL}
	src, dst := make([]int, R), make([]int, R)
	for r, rel := range s.Relations {
		src[r], dst[r] = s.TypeIndex(rel.Src), s.TypeIndex(rel.Dst)
	}
	if flags&batchPyG != 0 {
		b.Semantics = epoch.PyG
		if b.PyG, err = d.heteroPyG(s, L, b.EdgeIDs, src, dst); err != nil {
			return nil, err
		}
	} else {
		if L == 0 {
			return nil, d.fail("DGL heterogeneous minibatch without hops")
		}
		if b.DGL, err = d.heteroDGL(s, L, b.EdgeIDs, src, dst); err != nil {
			return nil, err
		}
	}
	if flags&batchHeteroX != 0 {
		if b.X, err = d.heteroRows(s, b); err != nil {
			return nil, err
		}
	}
	if flags&batchHeteroY != 0 {
		if b.Y, err = d.heteroLabels(s, b); err != nil {
			return nil, err
		}
	}
	return b, d.end()
}

// present reads the presence byte of a node type's section (0 absent, 1
// present).
func (d *decoder) present(name string) (bool, error) {
	has, err := d.u8(name + " presence")
	if err != nil {
		return false, err
	}
	if has > 1 {
		return false, d.fail(fmt.Sprintf("%s presence %d", name, has))
	}
	return has == 1, nil
}

// heteroLabels reads the labels of each node type: as many as its rows,
// each a class (>= 0) or -1.
func (d *decoder) heteroLabels(s *heteroepoch.Schema, b *HeteroBatch) ([][]int32, error) {
	ys := make([][]int32, len(s.NodeTypes))
	for t := range ys {
		name := s.NodeTypes[t].Name + " y"
		has, err := d.present(name)
		if err != nil {
			return nil, err
		}
		if !has {
			continue
		}
		y, err := d.i32s(name)
		if err != nil {
			return nil, err
		}
		if want := b.rowNodes(t); len(y) != want {
			return nil, d.fail(fmt.Sprintf("%s has %d labels for %d nodes", name, len(y), want))
		}
		for i, v := range y {
			if v < -1 {
				return nil, d.fail(fmt.Sprintf("%s: label %d of row %d, want >= 0 or -1", name, v, i))
			}
		}
		ys[t] = y
	}
	return ys, nil
}

// heteroRows reads the feature rows of each node type.
func (d *decoder) heteroRows(s *heteroepoch.Schema, b *HeteroBatch) ([]*HeteroRows, error) {
	xs := make([]*HeteroRows, len(s.NodeTypes))
	for t := range xs {
		name := s.NodeTypes[t].Name + " x"
		has, err := d.present(name)
		if err != nil {
			return nil, err
		}
		if !has {
			continue
		}
		if len(d.p)-d.off < 2+16 {
			return nil, d.fail("truncated header of " + name)
		}
		dt, nd := d.p[d.off], d.p[d.off+1]
		size := dtypeSize(dt)
		if nd != 2 || size == 0 || dt == DtypeU32 || dt == DtypeI32 || dt == DtypeI64 || dt == DtypeU64 {
			return nil, d.fail(fmt.Sprintf("%s: dtype %d ndim %d, want a feature dtype and 2 dimensions", name, dt, nd))
		}
		rows := binary.LittleEndian.Uint64(d.p[d.off+2:])
		dim := binary.LittleEndian.Uint64(d.p[d.off+10:])
		if want := uint64(b.rowNodes(t)); rows != want {
			return nil, d.fail(fmt.Sprintf("%s has %d rows for %d nodes", name, rows, want))
		}
		d.off += 18
		if dim < 1 || dim > uint64(len(d.p)) || rows*dim*uint64(size) > uint64(len(d.p)-d.off) {
			return nil, d.fail(fmt.Sprintf("%s: [%d, %d] past the payload's end", name, rows, dim))
		}
		n := int(rows * dim * uint64(size))
		xs[t] = &HeteroRows{DType: dt, Dim: int(dim), Rows: append([]byte(nil), d.p[d.off:d.off+n]...)}
		d.off += n
	}
	return xs, nil
}

func (d *decoder) intsU32(what string, want int) ([]int, error) {
	a, err := d.u32s(what)
	if err != nil {
		return nil, err
	}
	if len(a) != want {
		return nil, d.fail(fmt.Sprintf("%s has %d entries, want %d", what, len(a), want))
	}
	out := make([]int, len(a))
	for i, v := range a {
		out[i] = int(v)
	}
	return out, nil
}

func (d *decoder) heteroPyG(s *heteroepoch.Schema, L int, eids bool, src, dst []int) (*heteroepoch.PyGBatch, error) {
	b := &heteroepoch.PyGBatch{Nodes: make([]heteroepoch.PyGNodes, len(s.NodeTypes)), Edges: make([]heteroepoch.PyGEdges, len(s.Relations))}
	var err error
	for t := range b.Nodes {
		n, name := &b.Nodes[t], s.NodeTypes[t].Name
		if n.NID, err = d.u32s(name + " n_id"); err != nil {
			return nil, err
		}
		if n.NumSampledNodes, err = d.intsU32(name+" num_sampled_nodes", L+1); err != nil {
			return nil, err
		}
		sum := 0
		for _, c := range n.NumSampledNodes {
			sum += c
		}
		if sum != len(n.NID) {
			return nil, d.fail(fmt.Sprintf("%s num_sampled_nodes sums to %d for %d n_id", name, sum, len(n.NID)))
		}
		bs, err := d.u32(name + " batch_size")
		if err != nil {
			return nil, err
		}
		if int(bs) != n.NumSampledNodes[0] {
			return nil, d.fail(fmt.Sprintf("%s batch_size %d for %d seeds", name, bs, n.NumSampledNodes[0]))
		}
		n.BatchSize = int(bs)
	}
	for r := range b.Edges {
		e, name := &b.Edges[r], s.Relations[r].String()
		raw, rows, cols, err := d.array2(name+" edge_index", DtypeI64)
		if err != nil {
			return nil, err
		}
		if rows != 2 {
			return nil, d.fail(fmt.Sprintf("%s edge_index has %d rows, want 2", name, rows))
		}
		ei := leI64s(raw)
		e.Row, e.Col = make([]int32, cols), make([]int32, cols)
		ns, nd := int64(len(b.Nodes[src[r]].NID)), int64(len(b.Nodes[dst[r]].NID))
		for i := 0; i < cols; i++ {
			if ei[i] < 0 || ei[i] >= ns || ei[cols+i] < 0 || ei[cols+i] >= nd {
				return nil, d.fail(fmt.Sprintf("%s edge %d (%d, %d) outside n_id of %d and %d nodes", name, i, ei[i], ei[cols+i], ns, nd))
			}
			e.Row[i], e.Col[i] = int32(ei[i]), int32(ei[cols+i])
		}
		if eids {
			if e.EID, err = d.i64s(name + " e_id"); err != nil {
				return nil, err
			}
			if len(e.EID) != cols {
				return nil, d.fail(fmt.Sprintf("%s e_id has %d entries for %d edges", name, len(e.EID), cols))
			}
		}
		if e.NumSampledEdges, err = d.intsU32(name+" num_sampled_edges", L); err != nil {
			return nil, err
		}
		sum := 0
		for _, c := range e.NumSampledEdges {
			sum += c
		}
		if sum != cols {
			return nil, d.fail(fmt.Sprintf("%s num_sampled_edges sums to %d for %d edges", name, sum, cols))
		}
	}
	return b, nil
}

func (d *decoder) heteroDGL(s *heteroepoch.Schema, L int, eids bool, src, dst []int) ([]heteroepoch.DGLBlock, error) {
	T, R := len(s.NodeTypes), len(s.Relations)
	cur := make([][]uint32, T)
	var err error
	for t := range cur {
		if cur[t], err = d.u32s(s.NodeTypes[t].Name + " seeds"); err != nil {
			return nil, err
		}
	}
	blocks := make([]heteroepoch.DGLBlock, L)
	for h := range blocks {
		bl := &blocks[h]
		bl.DstNID, bl.SrcNID, bl.Edges = cur, make([][]uint32, T), make([]heteroepoch.DGLEdges, R)
		for t := range bl.SrcNID {
			name := fmt.Sprintf("hop %d %s src", h+1, s.NodeTypes[t].Name)
			if bl.SrcNID[t], err = d.u32s(name); err != nil {
				return nil, err
			}
			if len(bl.SrcNID[t]) < len(cur[t]) {
				return nil, d.fail(fmt.Sprintf("%s has %d nodes, fewer than its %d dst nodes", name, len(bl.SrcNID[t]), len(cur[t])))
			}
			for i, v := range cur[t] {
				if bl.SrcNID[t][i] != v {
					return nil, d.fail(fmt.Sprintf("%s does not start with its dst nodes (position %d)", name, i))
				}
			}
		}
		for r := range bl.Edges {
			e, name := &bl.Edges[r], fmt.Sprintf("hop %d %s", h+1, s.Relations[r])
			if e.Src, err = d.i32s(name + " src"); err != nil {
				return nil, err
			}
			if e.Dst, err = d.i32s(name + " dst"); err != nil {
				return nil, err
			}
			if len(e.Src) != len(e.Dst) {
				return nil, d.fail(fmt.Sprintf("%s has %d src and %d dst", name, len(e.Src), len(e.Dst)))
			}
			ns, nd := int32(len(bl.SrcNID[src[r]])), int32(len(bl.DstNID[dst[r]]))
			for i := range e.Src {
				if e.Src[i] < 0 || e.Src[i] >= ns || e.Dst[i] < 0 || e.Dst[i] >= nd {
					return nil, d.fail(fmt.Sprintf("%s edge %d (%d, %d) outside %d src and %d dst nodes", name, i, e.Src[i], e.Dst[i], ns, nd))
				}
			}
			if eids {
				if e.EID, err = d.i64s(name + " e_id"); err != nil {
					return nil, err
				}
				if len(e.EID) != len(e.Src) {
					return nil, d.fail(fmt.Sprintf("%s e_id has %d entries for %d edges", name, len(e.EID), len(e.Src)))
				}
			}
		}
		cur = bl.SrcNID
	}
	return blocks, nil
}
