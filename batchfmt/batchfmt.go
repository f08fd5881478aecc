// Package batchfmt writes one minibatch as streamsampler sample prints
// it: its blocks (epoch.Blocks) and, optionally, its nodes' feature rows
// and its seeds' labels (Features, read from the graph's feature store
// through featrows), as JSON (the blocks' one encoding,
// epoch.Blocks.AppendJSONFields, with the features after the hops), as an
// uncompressed .npz of NumPy arrays, or as a summary of their sizes.
package batchfmt

import (
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// WriteJSON writes b as epoch.Blocks encodes it ({"epoch":N,"seeds":[…],
// "hops":[{"dst":…,"src":…,"edge_src":…,"edge_dst":…},…]}) and a newline;
// with features f (nil: none), "n_id", "dtype", "dim", "x" and "y" follow
// "hops" (Features.appendJSON).
func WriteJSON(w io.Writer, b *epoch.Blocks, f *Features) error {
	buf := b.AppendJSONFields(nil)
	if f != nil {
		var err error
		if buf, err = f.appendJSON(w, buf); err != nil {
			return err
		}
	}
	buf = append(buf, "}\n"...)
	_, err := w.Write(buf)
	return err
}

// WriteSummary prints the sizes a reader checks first: per hop the
// destination and source counts and the number of edges between them;
// with features f (nil: none), a line of their sizes and reads.
func WriteSummary(w io.Writer, b *epoch.Blocks, f *Features) error {
	buf := fmt.Appendf(nil, "epoch %d, %d seeds\n", b.Epoch, len(b.Seeds))
	for h, hop := range b.Hops {
		buf = fmt.Appendf(buf, "hop %d: %d dst <- %d src (%d new), %d edges\n",
			h+1, len(hop.Dst), len(hop.Src), len(hop.Src)-len(hop.Dst), len(hop.EdgeSrc))
	}
	if f != nil {
		buf = f.summaryLine(buf)
	}
	_, err := w.Write(buf)
	return err
}

// WriteNPZ writes epoch (a scalar), seeds and hopH_{dst,src,edge_src,
// edge_dst[,e_id]} for H = 1..L as an uncompressed .npz; with features f
// (nil: none), also n_id, x and y (Features.addNPZ).
func WriteNPZ(w io.Writer, b *epoch.Blocks, f *Features) error {
	z := npy.NewNPZWriter(w)
	if err := npy.AddScalar(z, "epoch", b.Epoch); err != nil {
		return err
	}
	if err := npy.AddArray(z, "seeds", b.Seeds); err != nil {
		return err
	}
	for h := range b.Hops {
		hop := &b.Hops[h]
		p := fmt.Sprintf("hop%d_", h+1)
		for _, err := range []error{
			npy.AddArray(z, p+"dst", hop.Dst),
			npy.AddArray(z, p+"src", hop.Src),
			npy.AddArray(z, p+"edge_src", hop.EdgeSrc),
			npy.AddArray(z, p+"edge_dst", hop.EdgeDst),
		} {
			if err != nil {
				return err
			}
		}
		if hop.EdgeIDs != nil {
			if err := npy.AddArray(z, p+"e_id", hop.EdgeIDs); err != nil {
				return err
			}
		}
	}
	if f != nil {
		if err := f.addNPZ(z); err != nil {
			return err
		}
	}
	return z.Close()
}
