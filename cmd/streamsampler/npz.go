package main

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// writeNPY writes a 1-D little-endian array in NumPy's .npy format
// (version 1.0): magic, header length, a Python dict literal padded so
// that the data starts on a 64-byte boundary, then the raw data.
func writeNPY(w io.Writer, descr string, n int, data func(io.Writer) error, scalar bool) error {
	shape := fmt.Sprintf("(%d,)", n)
	if scalar {
		shape = "()"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	total := 10 + len(h) + 1
	h += strings.Repeat(" ", (64-total%64)%64) + "\n"
	var pre [10]byte
	copy(pre[:], "\x93NUMPY\x01\x00")
	binary.LittleEndian.PutUint16(pre[8:], uint16(len(h)))
	if _, err := w.Write(pre[:]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, h); err != nil {
		return err
	}
	return data(w)
}

func npyU32(w io.Writer, a []uint32) error {
	return writeNPY(w, "<u4", len(a), func(w io.Writer) error { return binary.Write(w, binary.LittleEndian, a) }, false)
}

func npyI32(w io.Writer, a []int32) error {
	return writeNPY(w, "<i4", len(a), func(w io.Writer) error { return binary.Write(w, binary.LittleEndian, a) }, false)
}

// npzArray is one named array of an .npz archive.
type npzArray struct {
	name  string
	write func(io.Writer) error
}

// writeNPZ writes arrays as an uncompressed .npz (a zip of .npy files),
// which numpy.load opens.
func writeNPZ(w io.Writer, arrays []npzArray) error {
	z := zip.NewWriter(w)
	for _, a := range arrays {
		f, err := z.CreateHeader(&zip.FileHeader{Name: a.name + ".npy", Method: zip.Store})
		if err != nil {
			return err
		}
		if err := a.write(f); err != nil {
			return fmt.Errorf("npz: %s: %w", a.name, err)
		}
	}
	return z.Close()
}
