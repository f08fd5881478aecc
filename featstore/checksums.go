package featstore

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// Checksums are one data file's CRC-32Cs, one per CRCSpan bytes (a row of
// the features, a page of the labels), loaded from its .crc file and
// checked against features.json when the store is opened: what every read
// of the file is checked against before any of its bytes is used. Safe
// for concurrent use (read-only).
type Checksums struct {
	df   *DataFile
	unit int64 // bytes per row (4 for labels): errors name a span's rows
	crcs []uint32
}

// ChecksumsOf returns the CRC-32C of each span bytes of b (the last span
// shorter): the content of a .crc file, as uint32s.
func ChecksumsOf(b []byte, span int64) []uint32 {
	crcs := make([]uint32, 0, (int64(len(b))+span-1)/span)
	for off := int64(0); off < int64(len(b)); off += span {
		crcs = append(crcs, crc32c.Checksum(b[off:min(off+span, int64(len(b)))]))
	}
	return crcs
}

// newChecksums returns the Checksums of df from crcs; unit is the bytes
// of a row.
func newChecksums(df *DataFile, unit int64, crcs []uint32) (*Checksums, error) {
	if df.CRCSpan <= 0 {
		return nil, fmt.Errorf("featstore: %s: CRC span %d", df.File, df.CRCSpan)
	}
	if int64(len(crcs)) != df.Spans() {
		return nil, fmt.Errorf("featstore: %s: %d CRCs for %d spans of %d bytes", df.File, len(crcs), df.Spans(), df.CRCSpan)
	}
	return &Checksums{df: df, unit: unit, crcs: crcs}, nil
}

// loadChecksums reads df's .crc file from r (size bytes) and checks it
// against the manifest: its size, then its CRC-32C.
func loadChecksums(r io.ReaderAt, size int64, df *DataFile, unit int64) (*Checksums, error) {
	cf := &DataFile{File: df.CRCs.File, Size: df.CRCFileSize(), CRCSpan: 4}
	if size != cf.Size {
		return nil, defect(cf, -1, 0, -1, "%d bytes, want %d (4 per %d bytes of %s's %d)", size, cf.Size, df.CRCSpan, df.File, df.Size)
	}
	b := make([]byte, size)
	if err := readFull(r, cf, b, 0); err != nil {
		return nil, err
	}
	if got := crc32c.Checksum(b); got != df.CRCs.CRC32C {
		return nil, defect(cf, -1, 0, -1, "CRC-32C %08x, features.json says %08x: the checksums changed since they were written", got, df.CRCs.CRC32C)
	}
	crcs := make([]uint32, len(b)/4)
	for i := range crcs {
		crcs[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return newChecksums(df, unit, crcs)
}

// File returns the data file the checksums are of.
func (c *Checksums) File() *DataFile { return c.df }

// Check checks b, the bytes of the data file at [off, off+len(b)), span
// by span (row by row for the features). off must start a span, and b
// must end one or end at the end of the file: a byte of b outside a span
// checked whole would be used unchecked, so such a range is refused (an
// error of the caller's, not ErrCorrupt). A span whose CRC-32C differs is
// a *DefectError naming the file, the span's bytes and the rows they hold
// (errors.Is ErrCorrupt).
func (c *Checksums) Check(off int64, b []byte) error {
	span := c.df.CRCSpan
	end := off + int64(len(b))
	switch {
	case off < 0 || off%span != 0:
		return fmt.Errorf("featstore: %s: check of bytes %d..%d: the range must start on a %d-byte span", c.df.File, off, end-1, span)
	case end > c.df.Size:
		return fmt.Errorf("featstore: %s: check of bytes %d..%d: past the end of the file (%d bytes)", c.df.File, off, end-1, c.df.Size)
	case end%span != 0 && end != c.df.Size:
		return fmt.Errorf("featstore: %s: check of bytes %d..%d: the range must end on a %d-byte span or at the end of the file", c.df.File, off, end-1, span)
	}
	for i := off / span; len(b) > 0; i++ {
		k := min(span, int64(len(b)))
		if got := crc32c.Checksum(b[:k]); got != c.crcs[i] {
			return defect(c.df, i, c.unit, -1, "CRC-32C %08x, %s says %08x: the file changed since it was written", got, c.df.CRCs.File, c.crcs[i])
		}
		b = b[k:]
	}
	return nil
}

// Widen returns the span-aligned range [lo, hi) that holds the bytes
// [off, end) of the file: what a checked read of them reads (the same
// range for whole rows of the features).
func (c *Checksums) Widen(off, end int64) (lo, hi int64) {
	span := c.df.CRCSpan
	lo = off / span * span
	hi = min((end+span-1)/span*span, c.df.Size)
	return lo, hi
}
