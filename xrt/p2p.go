package xrt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"
)

// Alignment rules of ReadP2P. O_DIRECT transfers whole logical blocks
// (512 bytes on NVMe) into memory aligned to them; a page-aligned buffer
// offset also keeps each transfer inside whole pages of a P2P BAR mapping.
const (
	P2PBufferAlign = 4096 // boOffset must be a multiple
	P2PBlock       = 512  // fileOffset and n must be multiples
)

// ReadP2P reads n bytes of f at fileOffset into the P2P buffer bo at
// boOffset, with pread on bo's mapping: on a SmartSSD the mapping is the
// FPGA's DDR exposed on the PCIe BAR, so the NVMe controller writes the
// data straight into device memory (open f with O_DIRECT so that the page
// cache stays out of the way); in the emulator it is the buffer's single
// storage. No Sync is needed afterwards.
//
// boOffset must be a multiple of P2PBufferAlign, fileOffset and n
// multiples of P2PBlock (the chunk format pads chunks to 512 bytes). A
// file that ends early gives an error wrapping ErrShortRead with the
// number of bytes read.
func ReadP2P(f *os.File, bo BO, boOffset int, fileOffset int64, n int) error {
	name := "<nil>"
	if f != nil {
		name = f.Name()
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("xrt: read %d bytes of %s at offset %d into BO %#x+%d: "+format,
			append([]any{n, name, fileOffset, bo.Address(), boOffset}, a...)...)
	}
	if f == nil {
		return fail("nil file")
	}
	if bo.Flags() != BOP2P {
		return fail("buffer is %s, not p2p", bo.Flags())
	}
	if boOffset%P2PBufferAlign != 0 || fileOffset%P2PBlock != 0 || n%P2PBlock != 0 || n <= 0 {
		return fail("%w: buffer offset must be a multiple of %d, file offset and a positive size multiples of %d",
			ErrAlignment, P2PBufferAlign, P2PBlock)
	}
	if fileOffset < 0 {
		return fail("negative file offset")
	}
	if err := checkRange(n, boOffset, bo.Size()); err != nil {
		return fail("%w", err)
	}
	m, err := bo.Map()
	if err != nil {
		return fail("%w", err)
	}
	dst := m[boOffset : boOffset+n]
	got, err := filePread(f, dst, fileOffset)
	switch {
	case errors.Is(err, io.EOF) || (err == nil && got < n):
		return fail("%w: file ended after %d bytes", ErrShortRead, got)
	case err != nil:
		if addr := uintptr(unsafe.Pointer(&dst[0])); addr%P2PBlock != 0 {
			return fail("%w (the mapping at %#x is not %d-aligned, which O_DIRECT needs)", err, addr, P2PBlock)
		}
		return fail("%w", err)
	}
	return nil
}
