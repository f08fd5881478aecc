package main

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/edsrzf/mmap-go"

	"github.com/streamsampler/streamsampler/internal/atomicfile"
	"github.com/streamsampler/streamsampler/internal/hostorder"
	"github.com/streamsampler/streamsampler/internal/npy"
)

// mappedNPY is an int32 .npy of shape [rows, cols] being written through
// a memory mapping of its temporary file, so that an output larger than
// memory (W·(L+1) int32: 13.6 GB for 10 walks of 80 steps from each node
// of an R-MAT scale 22 graph) never has to be held: the walker writes
// into data, the kernel writes the pages back. commit installs it
// atomically; abort (deferred) removes it, leaving any previous file.
type mappedNPY struct {
	path string
	af   *atomicfile.File
	mm   mmap.MMap
	data []int32 // the .npy's data, aliasing mm
}

// createWalksNPY creates path's temporary, writes the header, reserves
// the data's blocks (so that a full disk fails here, not as a SIGBUS in
// the middle of the walk) and maps the file.
func createWalksNPY(path string, rows, cols int) (*mappedNPY, error) {
	if !hostorder.LittleEndian {
		return nil, fmt.Errorf("write %s: the walks are mapped as little-endian int32, and this host is big-endian", path)
	}
	var head bytes.Buffer
	if _, err := (npy.Header{Descr: npy.Descr[int32](), Shape: []int{rows, cols}}).WriteTo(&head); err != nil {
		return nil, err
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	m := &mappedNPY{path: path, af: af}
	ok := false
	defer func() {
		if !ok {
			m.abort()
		}
	}()
	if _, err := af.Write(head.Bytes()); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	size := int64(head.Len()) + 4*int64(rows)*int64(cols)
	if err := reserveFile(af.OSFile(), size); err != nil {
		return nil, fmt.Errorf("write %s: reserve %d bytes: %w", path, size, err)
	}
	if m.mm, err = mmap.Map(af.OSFile(), mmap.RDWR, 0); err != nil {
		return nil, fmt.Errorf("write %s: map %d bytes: %w", path, size, err)
	}
	words, isWords := hostorder.Words(m.mm[head.Len():]) // the header is 64-byte aligned: so is the data
	if !isWords || len(words) != rows*cols {
		return nil, fmt.Errorf("write %s: cannot view the mapped data as %d int32", path, rows*cols)
	}
	m.data = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(words))), len(words))
	ok = true
	return m, nil
}

// commit writes the mapped pages back (msync), unmaps them, and installs
// the file (fsync, close, rename, directory fsync).
func (m *mappedNPY) commit() error {
	m.data = nil
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

// abort unmaps and removes the temporary; after commit it does nothing.
func (m *mappedNPY) abort() {
	m.data = nil
	if m.mm != nil {
		m.mm.Unmap()
		m.mm = nil
	}
	m.af.Abort()
}
