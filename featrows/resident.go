package featrows

import (
	"context"
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/featstore"
	"github.com/streamsampler/streamsampler/internal/hugepages"
)

// residentRead is how much of the feature file LoadResident reads at once.
const residentRead = 16 << 20

// Resident is a feature store's rows held in memory whole: the cache of a
// server that plans no epoch's reads (the heterogeneous one, a store per
// node type) for the stores that fit its memory. Every row was checked
// against its CRC-32C as it was loaded; a gather is then a copy per row,
// with no system call, as fast from many goroutines as from one.
type Resident struct {
	rows     []byte
	rowBytes int64
	numNodes uint32
}

// LoadResident reads st's feature file whole, sequentially, checking
// every row against its CRC-32C (a featstore.DefectError, errors.Is
// featstore.ErrCorrupt, naming the row, on a mismatch), and returns the
// rows held in memory. The store stays the caller's; the Resident does
// not use it after. ctx cancels the load between reads.
func LoadResident(ctx context.Context, st *featstore.Store) (*Resident, error) {
	rb := st.RowBytes()
	size := int64(st.NumNodes()) * rb
	rows := make([]byte, size)
	hugepages.Advise(rows)
	sum := st.FeatureChecksums()
	span := sum.File().CRCSpan
	step := max(span, residentRead/span*span)
	r := st.FeatureReader()
	for off := int64(0); off < size; off += step {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := rows[off:min(off+step, size)]
		if n, err := r.ReadAt(b, off); n < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("featrows: %s: loading its rows: read %d bytes at %d, want %d: %w", sum.File().File, n, off, len(b), err)
		}
		if err := sum.Check(off, b); err != nil {
			return nil, fmt.Errorf("featrows: loading its rows: %w", err)
		}
	}
	return &Resident{rows: rows, rowBytes: rb, numNodes: st.NumNodes()}, nil
}

// Bytes returns the memory the rows take.
func (r *Resident) Bytes() int64 { return int64(len(r.rows)) }

// ReadRows copies the rows of nodes (repeats allowed), in nodes' order,
// into dst (at least len(nodes)·RowBytes bytes). It is safe for
// concurrent use.
func (r *Resident) ReadRows(nodes []uint32, dst []byte) error {
	rb := r.rowBytes
	if int64(len(dst)) < int64(len(nodes))*rb {
		return fmt.Errorf("featrows: %d rows need %d bytes, buffer has %d", len(nodes), int64(len(nodes))*rb, len(dst))
	}
	for i, v := range nodes {
		if v >= r.numNodes {
			return fmt.Errorf("featrows: node %d (position %d): out of range, the store has %d nodes", v, i, r.numNodes)
		}
		copy(dst[int64(i)*rb:int64(i+1)*rb], r.rows[int64(v)*rb:int64(v+1)*rb])
	}
	return nil
}
