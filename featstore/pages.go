package featstore

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// Pages are one data file's page checksums, loaded from its .crc file and
// checked against features.json when the store is opened: what every read
// of the file is checked against before any of its bytes is used. Safe
// for concurrent use (read-only).
type Pages struct {
	df   *DataFile
	unit int64 // bytes per row (4 for labels): errors name a page's rows
	crcs []uint32
}

// PageChecksums returns the CRC-32C of each PageSize bytes of b (the last
// page shorter): the content of a .crc file, as uint32s.
func PageChecksums(b []byte) []uint32 {
	crcs := make([]uint32, 0, (len(b)+PageSize-1)/PageSize)
	for off := 0; off < len(b); off += PageSize {
		crcs = append(crcs, crc32c.Checksum(b[off:min(off+PageSize, len(b))]))
	}
	return crcs
}

// newPages returns the Pages of df from its checksums crcs; unit is the
// bytes of a row.
func newPages(df *DataFile, unit int64, crcs []uint32) (*Pages, error) {
	if int64(len(crcs)) != df.Pages() {
		return nil, fmt.Errorf("featstore: %s: %d page checksums for %d pages", df.File, len(crcs), df.Pages())
	}
	return &Pages{df: df, unit: unit, crcs: crcs}, nil
}

// loadPages reads df's .crc file from r (size bytes) and checks it
// against the manifest: its size, then its CRC-32C.
func loadPages(r io.ReaderAt, size int64, df *DataFile, unit int64) (*Pages, error) {
	pf := &DataFile{File: df.PageCRCs.File, Size: df.CRCFileSize(), PageSize: PageSize}
	if size != pf.Size {
		return nil, defect(pf, -1, 0, -1, "%d bytes, want %d (4 per page of %s's %d bytes)", size, pf.Size, df.File, df.Size)
	}
	b := make([]byte, size)
	if err := readFull(r, pf, b, 0); err != nil {
		return nil, err
	}
	if got := crc32c.Checksum(b); got != df.PageCRCs.CRC32C {
		return nil, defect(pf, -1, 0, -1, "CRC-32C %08x, features.json says %08x: the page checksums changed since they were written", got, df.PageCRCs.CRC32C)
	}
	crcs := make([]uint32, len(b)/4)
	for i := range crcs {
		crcs[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return newPages(df, unit, crcs)
}

// File returns the data file the checksums are of.
func (p *Pages) File() *DataFile { return p.df }

// Check checks b, the bytes of the data file at [off, off+len(b)), page by
// page. off must be a multiple of PageSize, and b must end on a page
// boundary or at the end of the file: a byte of b outside a page checked
// whole would be used unchecked, so such a range is refused (an error of
// the caller's, not ErrCorrupt). A page whose CRC-32C differs is a
// *DefectError naming the file, the page, its bytes and the rows they
// hold (errors.Is ErrCorrupt).
func (p *Pages) Check(off int64, b []byte) error {
	end := off + int64(len(b))
	switch {
	case off < 0 || off%PageSize != 0:
		return fmt.Errorf("featstore: %s: check of bytes %d..%d: the range must start on a %d-byte page", p.df.File, off, end-1, PageSize)
	case end > p.df.Size:
		return fmt.Errorf("featstore: %s: check of bytes %d..%d: past the end of the file (%d bytes)", p.df.File, off, end-1, p.df.Size)
	case end%PageSize != 0 && end != p.df.Size:
		return fmt.Errorf("featstore: %s: check of bytes %d..%d: the range must end on a %d-byte page or at the end of the file", p.df.File, off, end-1, PageSize)
	}
	for i := off / PageSize; len(b) > 0; i++ {
		k := min(PageSize, len(b))
		if got := crc32c.Checksum(b[:k]); got != p.crcs[i] {
			return defect(p.df, i, p.unit, -1, "CRC-32C %08x, %s says %08x: the file changed since it was written", got, p.df.PageCRCs.File, p.crcs[i])
		}
		b = b[k:]
	}
	return nil
}

// Span returns the page-aligned range [lo, hi) that holds the bytes
// [off, end) of the file: what a checked read of them reads.
func (p *Pages) Span(off, end int64) (lo, hi int64) {
	lo = off &^ (PageSize - 1)
	hi = min((end+PageSize-1)&^(PageSize-1), p.df.Size)
	return lo, hi
}
