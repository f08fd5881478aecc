package npy

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/edsrzf/mmap-go"

	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/hostorder"
)

// MappedInt32 is a 2-D int32 .npy of shape [rows, cols] being written
// through a memory mapping of its temporary file, so that an array larger
// than memory (walk's W·(L+1) int32: 13.6 GB for 10 walks of 80 steps
// from each node of an R-MAT scale 22 graph) never has to be held: the
// writer fills Data, the kernel writes the pages back. Commit installs the
// file atomically; Abort (deferred) removes it, leaving any previous file
// at the path as it was.
type MappedInt32 struct {
	// Data is the array's rows·cols entries, row after row, aliasing the
	// mapping: valid until Commit or Abort.
	Data []int32
	path string
	af   *atomicfile.File
	mm   mmap.MMap
}

// CreateMappedInt32 creates path's temporary (atomicfile), writes the
// header, reserves the data's blocks (so that a full disk fails here, not
// as a SIGBUS in the middle of filling Data) and maps the file. The
// entries start at zero. It refuses a big-endian host, where the mapped
// words would not be the file's little-endian encoding.
func CreateMappedInt32(path string, rows, cols int) (*MappedInt32, error) {
	if !hostorder.LittleEndian {
		return nil, fmt.Errorf("write %s: the array is mapped as little-endian int32, and this host is big-endian", path)
	}
	var head bytes.Buffer
	if _, err := (Header{Descr: Descr[int32](), Shape: []int{rows, cols}}).WriteTo(&head); err != nil {
		return nil, err
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	m := &MappedInt32{path: path, af: af}
	ok := false
	defer func() {
		if !ok {
			m.Abort()
		}
	}()
	if _, err := af.Write(head.Bytes()); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	size := int64(head.Len()) + 4*int64(rows)*int64(cols)
	if err := reserve(af.OSFile(), size); err != nil {
		return nil, fmt.Errorf("write %s: reserve %d bytes: %w", path, size, err)
	}
	if m.mm, err = mmap.Map(af.OSFile(), mmap.RDWR, 0); err != nil {
		return nil, fmt.Errorf("write %s: map %d bytes: %w", path, size, err)
	}
	words, isWords := hostorder.Words(m.mm[head.Len():]) // the header is 64-byte aligned: so is the data
	if !isWords || len(words) != rows*cols {
		return nil, fmt.Errorf("write %s: cannot view the mapped data as %d int32", path, rows*cols)
	}
	m.Data = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(words))), len(words))
	ok = true
	return m, nil
}

// Commit writes the mapped pages back (msync), unmaps them, and installs
// the file (fsync, close, rename, directory fsync).
func (m *MappedInt32) Commit() error {
	m.Data = nil
	err := m.mm.Flush()
	if uerr := m.mm.Unmap(); err == nil {
		err = uerr
	}
	m.mm = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", m.path, err)
	}
	return m.af.Commit()
}

// Abort unmaps and removes the temporary; after Commit it does nothing.
func (m *MappedInt32) Abort() {
	m.Data = nil
	if m.mm != nil {
		m.mm.Unmap()
		m.mm = nil
	}
	m.af.Abort()
}
