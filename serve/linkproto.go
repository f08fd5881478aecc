package serve

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/hostorder"
)

// batchLink, a minibatch flag: the link fields follow the last hop,
// before the features (docs/PROTOCOL.md, "Link minibatches").
const batchLink uint8 = 1 << 2

// linkFixedSize is the link section's fixed part: u8 mode, u32 P, f64
// amount.
const linkFixedSize = 1 + 4 + 8

// linkSize is the size of f's link section.
func linkSize(f *epoch.LinkFields) int64 {
	if f == nil {
		return 0
	}
	n := int64(linkFixedSize) + arrayHeaderSize + 8*int64(len(f.InputID))
	if f.Mode == epoch.NegTriplet {
		return n + 2*(arrayHeaderSize+8*int64(len(f.SrcIndex))) + arrayHeaderSize + 8 + 8*int64(len(f.DstNegIndex))
	}
	n += arrayHeaderSize + 8 + 8*int64(len(f.EdgeLabelIndex))
	return n + arrayHeaderSize + 8*int64(len(f.EdgeLabelI64)) + 4*int64(len(f.EdgeLabelF32))
}

// appendArray2Header appends a 2-D array header ([rows, cols]).
func appendArray2Header(dst []byte, dtype uint8, rows, cols int) []byte {
	dst = append(dst, dtype, 2)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(rows))
	return binary.LittleEndian.AppendUint64(dst, uint64(cols))
}

// i64s2 writes a 2-D int64 array of rows × cols (a row-major).
func (w *blocksWriter) i64s2(a []int64, rows, cols int) {
	w.hdr = appendArray2Header(w.hdr, DtypeI64, rows, cols)
	w.size += arrayHeaderSize + 8 + 8*len(a)
	w.raw(hostorder.Bytes(a), func() {
		for _, v := range a {
			w.hdr = binary.LittleEndian.AppendUint64(w.hdr, uint64(v))
		}
	})
}

// f32s writes a float32 array.
func (w *blocksWriter) f32s(a []float32) {
	w.hdr = appendArrayHeader(w.hdr, DtypeF32, len(a))
	w.size += arrayHeaderSize + 4*len(a)
	bits := make([]uint32, len(a)) // labels: one word per supervision edge
	for i, v := range a {
		bits[i] = math.Float32bits(v)
	}
	w.raw(hostorder.Bytes(bits), func() {
		for _, v := range bits {
			w.hdr = binary.LittleEndian.AppendUint32(w.hdr, v)
		}
	})
}

// raw adds an array's elements: its memory on a little-endian host, or
// what swap appends to hdr.
func (w *blocksWriter) raw(b []byte, swap func()) {
	if !hostorder.LittleEndian {
		swap()
		return
	}
	if len(b) > 0 {
		w.flushHeader()
		w.bufs = append(w.bufs, b)
	}
}

// link writes a link minibatch's section: u8 mode, u32 P, f64 amount,
// input_id, then edge_label_index [2, M] and edge_label (modes 0, 1), or
// src_index, dst_pos_index and dst_neg_index [P, K] (mode 2).
func (w *blocksWriter) link(f *epoch.LinkFields) {
	w.hdr = append(w.hdr, uint8(f.Mode))
	w.hdr = binary.LittleEndian.AppendUint32(w.hdr, uint32(len(f.InputID)))
	w.hdr = binary.LittleEndian.AppendUint64(w.hdr, math.Float64bits(f.Amount))
	w.size += linkFixedSize
	w.i64s(f.InputID)
	if f.Mode == epoch.NegTriplet {
		w.i64s(f.SrcIndex)
		w.i64s(f.DstPosIndex)
		w.i64s2(f.DstNegIndex, len(f.InputID), f.K)
		return
	}
	w.i64s2(f.EdgeLabelIndex, 2, len(f.EdgeLabelIndex)/2)
	if f.EdgeLabelI64 != nil {
		w.i64s(f.EdgeLabelI64)
	} else {
		w.f32s(f.EdgeLabelF32)
	}
}

// array2 reads a 2-D array of dtype and returns its bytes and shape.
func (d *decoder) array2(what string, dtype uint8) ([]byte, int, int, error) {
	if len(d.p)-d.off < 2+16 {
		return nil, 0, 0, d.fail(what)
	}
	if d.p[d.off] != dtype || d.p[d.off+1] != 2 {
		return nil, 0, 0, d.fail(fmt.Sprintf("%s: dtype %d ndim %d, want dtype %d ndim 2", what, d.p[d.off], d.p[d.off+1], dtype))
	}
	rows := binary.LittleEndian.Uint64(d.p[d.off+2:])
	cols := binary.LittleEndian.Uint64(d.p[d.off+10:])
	d.off += 18
	if rows > uint64(len(d.p)) || cols > uint64(len(d.p)) || rows*cols*8 > uint64(len(d.p)-d.off) {
		return nil, 0, 0, d.fail(fmt.Sprintf("%s: [%d, %d] past the payload's end", what, rows, cols))
	}
	n := int(rows * cols * 8)
	b := d.p[d.off : d.off+n]
	d.off += n
	return b, int(rows), int(cols), nil
}

func leI64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// f32s reads a float32 array.
func (d *decoder) f32s(what string) ([]float32, error) {
	b, err := d.array(what, DtypeF32)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// link reads a link section (the layout of blocksWriter.link) and checks
// its shapes and that every local id is a position in nid.
func (d *decoder) link(numNodes int) (*epoch.LinkFields, error) {
	mode, err := d.u8("link mode")
	if err != nil {
		return nil, err
	}
	if mode > uint8(epoch.NegTriplet) {
		d.off--
		return nil, d.fail(fmt.Sprintf("link mode %d", mode))
	}
	np, err := d.u32("link positives")
	if err != nil {
		return nil, err
	}
	if len(d.p)-d.off < 8 {
		return nil, d.fail("link amount")
	}
	f := &epoch.LinkFields{Mode: epoch.NegMode(mode), Amount: math.Float64frombits(binary.LittleEndian.Uint64(d.p[d.off:]))}
	d.off += 8
	if f.InputID, err = d.i64s("input_id"); err != nil {
		return nil, err
	}
	P := int(np)
	if len(f.InputID) != P {
		return nil, d.fail(fmt.Sprintf("input_id has %d elements for %d positives", len(f.InputID), P))
	}
	var locals [][]int64
	if f.Mode == epoch.NegTriplet {
		if f.SrcIndex, err = d.i64s("src_index"); err != nil {
			return nil, err
		}
		if f.DstPosIndex, err = d.i64s("dst_pos_index"); err != nil {
			return nil, err
		}
		b, rows, cols, err := d.array2("dst_neg_index", DtypeI64)
		if err != nil {
			return nil, err
		}
		if len(f.SrcIndex) != P || len(f.DstPosIndex) != P || rows != P {
			return nil, d.fail(fmt.Sprintf("triplet fields of %d, %d and %d rows for %d positives", len(f.SrcIndex), len(f.DstPosIndex), rows, P))
		}
		f.DstNegIndex, f.K = leI64s(b), cols
		locals = [][]int64{f.SrcIndex, f.DstPosIndex, f.DstNegIndex}
	} else {
		b, rows, cols, err := d.array2("edge_label_index", DtypeI64)
		if err != nil {
			return nil, err
		}
		if rows != 2 || cols < P {
			return nil, d.fail(fmt.Sprintf("edge_label_index [%d, %d] for %d positives, want [2, >= %d]", rows, cols, P, P))
		}
		f.EdgeLabelIndex = leI64s(b)
		if d.off < len(d.p) && d.p[d.off] == DtypeI64 {
			f.EdgeLabelI64, err = d.i64s("edge_label")
		} else {
			f.EdgeLabelF32, err = d.f32s("edge_label")
		}
		if err != nil {
			return nil, err
		}
		if n := max(len(f.EdgeLabelI64), len(f.EdgeLabelF32)); n != cols {
			return nil, d.fail(fmt.Sprintf("edge_label has %d elements for %d supervision edges", n, cols))
		}
		locals = [][]int64{f.EdgeLabelIndex}
	}
	for _, a := range locals {
		for _, v := range a {
			if v < 0 || v >= int64(numNodes) {
				return nil, d.fail(fmt.Sprintf("link field local id %d outside the minibatch's %d nodes", v, numNodes))
			}
		}
	}
	return f, nil
}
