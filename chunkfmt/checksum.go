package chunkfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/streamsampler/streamsampler/internal/crc32c"
)

// ErrChecksum is matched (errors.Is) by every *ChecksumError: a chunk's
// bytes do not have the CRC-32C that the manifest records for them. It is a
// kind of corruption, so such errors match ErrCorrupt too.
var ErrChecksum = errors.New("chunkfmt: chunk checksum mismatch")

// ChecksumError reports a chunk read whose CRC-32C differs from the
// manifest's: the file, the chunk with its node range, and the byte range
// [Offset, Offset+Length) of the file that was read and checked.
type ChecksumError struct {
	File   string // the file read, as the caller named it (a path or ChunksFile)
	Chunk  int
	Start  uint32 // first node of Chunk
	End    uint32 // one past its last node
	Offset int64  // file offset of the bytes checked (the chunk's start)
	Length int64  // bytes read and checked; the rest of the chunk is zero fill
	Got    uint32 // CRC-32C of the chunk as read
	Want   uint32 // CRC-32C in the manifest
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("chunkfmt: %s: chunk %d (nodes %d..%d, bytes %d..%d): CRC-32C %#08x, manifest says %#08x: the file changed since it was written",
		e.File, e.Chunk, e.Start, e.End-1, e.Offset, e.Offset+e.Length-1, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrChecksum) and errors.Is(err, ErrCorrupt) true.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum || target == ErrCorrupt }

// CheckChunk checks the CRC-32C of chunk i, given its first len(b) bytes
// as read from file (named in the error). It is the check every reader of
// chunks runs before using their content (FORMAT.md, "Checked reads").
//
// b may stop short of the chunk's stored size (ChunkStoredSize): a reader
// needs only ChunkReadSize bytes, and the rest is zero fill, which is
// therefore taken as zero rather than read (crc32c.Combine extends the CRC
// over it in O(log n)). Fill that was never read cannot change a sample;
// Verify reads and checks it too. b longer than the stored size is an
// error.
func (m *Manifest) CheckChunk(file string, i int, b []byte) error {
	if i < 0 || i >= len(m.Chunks) {
		return fmt.Errorf("chunkfmt: %s: chunk %d: out of range [0,%d)", file, i, len(m.Chunks))
	}
	return m.CheckChunkSum(file, i, crc32c.Checksum(b), int64(len(b)))
}

// CheckChunkSum is CheckChunk for a reader that computed the CRC-32C of
// the chunk's first n bytes itself: in pieces as they arrived, say, joined
// with crc32c.Combine, so that the check overlaps the read.
func (m *Manifest) CheckChunkSum(file string, i int, crc uint32, n int64) error {
	if i < 0 || i >= len(m.Chunks) {
		return fmt.Errorf("chunkfmt: %s: chunk %d: out of range [0,%d)", file, i, len(m.Chunks))
	}
	stored := m.ChunkStoredSize(i)
	if n > stored {
		return fmt.Errorf("chunkfmt: %s: chunk %d: %d bytes to check, the chunk stores %d", file, i, n, stored)
	}
	got := zeroExtend(crc, stored-n)
	c := &m.Chunks[i]
	if got == c.CRC32C {
		return nil
	}
	return &ChecksumError{File: file, Chunk: i, Start: c.Start, End: c.End, Offset: m.ChunkOffset(i), Length: n, Got: got, Want: c.CRC32C}
}

// zeroExtend returns the CRC-32C of the bytes whose CRC-32C is crc followed
// by n zero bytes. CRC(0^n) = ^shift(0xFFFFFFFF, n), where shift (the
// multiplication by x^(8n) that Combine does with crc2 = 0) is what the
// register's initial value contributes.
func zeroExtend(crc uint32, n int64) uint32 {
	if n <= 0 {
		return crc
	}
	zeros := ^crc32c.Combine(0xFFFFFFFF, 0, n)
	return crc32c.Combine(crc, zeros, n)
}

// CheckHeaders checks the header of every chunk of edges.chunks, read
// from r, against the manifest m and so against chunks.info, which
// LoadIndex checks against m: word 0 must be the chunk's node count and
// word 1 its start node. It reads 8 bytes per chunk (r must allow reads
// that small: not an O_DIRECT file). The error, a *DefectError, names the
// chunk, the word and both values.
func CheckHeaders(r io.ReaderAt, m *Manifest) error {
	const file = ChunksFile
	var a [8]byte
	for i := range m.Chunks {
		c := &m.Chunks[i]
		if _, err := r.ReadAt(a[:], m.ChunkOffset(i)); err != nil {
			return fmt.Errorf("chunkfmt: %s: reading the header of chunk %d: %w", file, i, err)
		}
		n, s := binary.LittleEndian.Uint32(a[:]), binary.LittleEndian.Uint32(a[4:])
		if s != c.Start {
			return defect(m, file, i, -1, 1, "header start_node %d at word 1, %s and the manifest say %d", s, IndexFile, c.Start)
		}
		if n != c.NNodes {
			return defect(m, file, i, -1, 0, "header n_nodes %d at word 0, %s and the manifest say %d", n, IndexFile, c.NNodes)
		}
	}
	return nil
}
