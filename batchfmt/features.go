package batchfmt

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/featplan"
	"github.com/streamsampler/streamsampler/featrows"
	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// Features are one minibatch's feature rows and labels.
type Features struct {
	NID   []uint32 // the minibatch's nodes: the last hop's src, or the seeds
	X     []byte   // len(NID) rows of the store's row bytes, little-endian, in NID's order
	DType featstore.DType
	Dim   int
	Y     []int32         // the seeds' labels (featstore.NoLabel: none); nil when the store has none
	Reads featplan.Report // the reads that fetched X
}

// ReadFeatures reads the rows of b's nodes and its seeds' labels from
// the feature store of graph, the graph the blocks were sampled from (fp,
// its fingerprint as the state directory records it). One minibatch has
// no plan: its rows are read directly (featrows.Executor.ReadDirect:
// through the page cache, where a repeated read finds them). Opening the
// store fails as featstore.Open does (featstore.ErrNoFeatures without
// one); a store of another graph than fp wraps featstore.ErrGraphMismatch.
func ReadFeatures(graph string, fp chunkfmt.Fingerprint, b *epoch.Blocks) (*Features, error) {
	fs, err := featstore.Open(graph)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	// The store matches the directory's graph (Open checks it); the
	// directory must also still hold the graph the blocks were sampled
	// from, or the rows would be another graph's nodes'.
	if sg := fs.Manifest().Graph; sg != fp {
		return nil, fmt.Errorf("%w: the feature store of %s was packed for a graph of %d nodes, %d edges (chunk CRCs %08x); the state was prepared from one of %d nodes, %d edges (chunk CRCs %08x)",
			featstore.ErrGraphMismatch, graph, sg.NumNodes, sg.NumEdges, sg.ChunkCRCs, fp.NumNodes, fp.NumEdges, fp.ChunkCRCs)
	}
	rows, err := featrows.New(fs)
	if err != nil {
		return nil, fmt.Errorf("sample --features: %w", err)
	}
	defer rows.Close()
	f := &Features{NID: b.Nodes(), DType: fs.DType(), Dim: fs.Dim()}
	f.X = make([]byte, int64(len(f.NID))*fs.RowBytes())
	if f.Reads, err = rows.ReadDirect(f.NID, f.X); err != nil {
		return nil, err
	}
	if f.Y, err = rows.Labels(b.Seeds, nil); err != nil {
		return nil, err
	}
	return f, nil
}

// addNPZ adds n_id (uint32), x ([len(n_id), dim] of the store's dtype, its
// bytes as stored) and, with labels, y (int32).
func (f *Features) addNPZ(z *npy.NPZWriter) error {
	if err := npy.AddArray(z, "n_id", f.NID); err != nil {
		return err
	}
	w, err := z.Create("x")
	if err != nil {
		return err
	}
	if _, err := (npy.Header{Descr: f.DType.NumPyDescr(), Shape: []int{len(f.NID), f.Dim}}).WriteTo(w); err != nil {
		return fmt.Errorf("npz: x: %w", err)
	}
	if _, err := w.Write(f.X); err != nil {
		return fmt.Errorf("npz: x: %w", err)
	}
	if f.Y != nil {
		return npy.AddArray(z, "y", f.Y)
	}
	return nil
}

// jsonChunk is how much JSON is built before it is written.
const jsonChunk = 64 << 10

// appendJSON appends `,"n_id":[…],"dtype":"…","dim":D,"x":[[…],…]` and,
// with labels, `,"y":[…]` to buf, writing to w whenever buf grows past
// jsonChunk (x may be large); it returns what is left to write.
func (f *Features) appendJSON(w io.Writer, buf []byte) ([]byte, error) {
	buf = append(buf, `,"n_id":`...)
	buf = appendUints(buf, f.NID)
	buf = fmt.Appendf(buf, `,"dtype":%q,"dim":%d,"x":[`, f.DType, f.Dim)
	rb := len(f.X) / max(1, len(f.NID))
	for i := range f.NID {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRowJSON(buf, f.DType, f.X[i*rb:(i+1)*rb])
		if len(buf) >= jsonChunk {
			if _, err := w.Write(buf); err != nil {
				return nil, err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, ']')
	if f.Y != nil {
		buf = append(buf, `,"y":[`...)
		for i, v := range f.Y {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(v), 10)
		}
		buf = append(buf, ']')
	}
	return buf, nil
}

func appendUints(buf []byte, a []uint32) []byte {
	buf = append(buf, '[')
	for i, v := range a {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(buf, uint64(v), 10)
	}
	return append(buf, ']')
}

// appendRowJSON appends one row as a JSON array of numbers: integers for
// int8 and uint8; for float32 the shortest decimal that reads back as the
// same float32; a float16 widened (exactly) to float32 and printed the
// same way, so that it reads back as the same float16 too. JSON has no
// NaN or infinity: those are null (npz keeps every bit).
func appendRowJSON(buf []byte, d featstore.DType, row []byte) []byte {
	buf = append(buf, '[')
	n := len(row) / d.Size()
	for j := range n {
		if j > 0 {
			buf = append(buf, ',')
		}
		switch d {
		case featstore.Float32:
			buf = appendFloat32JSON(buf, math.Float32frombits(binary.LittleEndian.Uint32(row[4*j:])))
		case featstore.Float16:
			buf = appendFloat32JSON(buf, featstore.Float16ToFloat32(binary.LittleEndian.Uint16(row[2*j:])))
		case featstore.Int8:
			buf = strconv.AppendInt(buf, int64(int8(row[j])), 10)
		case featstore.Uint8:
			buf = strconv.AppendUint(buf, uint64(row[j]), 10)
		}
	}
	return append(buf, ']')
}

func appendFloat32JSON(buf []byte, v float32) []byte {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return append(buf, "null"...)
	}
	return strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
}

// summaryLine is the summary's line for the features: rows, dtype, bytes
// and the reads that fetched them.
func (f *Features) summaryLine(buf []byte) []byte {
	buf = fmt.Appendf(buf, "features: %d rows x %d %s = %d bytes", len(f.NID), f.Dim, f.DType, len(f.X))
	if f.Y != nil {
		buf = fmt.Appendf(buf, ", %d labels", len(f.Y))
	} else {
		buf = append(buf, ", no labels"...)
	}
	return fmt.Appendf(buf, " (read in %d requests, %d bytes)\n", f.Reads.Reads, f.Reads.BytesRead)
}
