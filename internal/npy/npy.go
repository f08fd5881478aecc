package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Elem is an element type this package can write: fixed-size numbers
// whose NumPy dtype Descr names.
type Elem interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | uint64 | int64 | float32 | float64
}

// Descr returns NumPy's dtype descriptor for T ("<u4" for uint32).
func Descr[T Elem]() string {
	var z T
	switch any(z).(type) {
	case uint8:
		return "|u1"
	case int8:
		return "|i1"
	case uint16:
		return "<u2"
	case int16:
		return "<i2"
	case uint32:
		return "<u4"
	case int32:
		return "<i4"
	case uint64:
		return "<u8"
	case int64:
		return "<i8"
	case float32:
		return "<f4"
	case float64:
		return "<f8"
	}
	panic("npy: unreachable: Elem has no other types")
}

// Header is a .npy header: the dtype descriptor and the shape (empty for
// a scalar), always C order.
type Header struct {
	Descr string
	Shape []int
}

// magic is the .npy signature and format version 1.0.
const magic = "\x93NUMPY\x01\x00"

// align is the boundary NumPy pads the header to, so that the data can be
// memory-mapped aligned.
const align = 64

// growthDigits is numpy.lib.format.GROWTH_AXIS_MAX_DIGITS.
const growthDigits = 21

// ErrHeaderTooLong is returned for a header over 65535 bytes, which
// version 1.0 cannot describe (a shape of thousands of dimensions).
var ErrHeaderTooLong = errors.New("npy: header too long for format 1.0")

// WriteTo writes the magic, version, header length and the header dict,
// padded with spaces and a newline to a multiple of 64 bytes.
func (h Header) WriteTo(w io.Writer) (int64, error) {
	var shape string
	switch len(h.Shape) {
	case 0:
		shape = "()"
	case 1:
		shape = "(" + strconv.Itoa(h.Shape[0]) + ",)"
	default:
		s := make([]string, len(h.Shape))
		for i, d := range h.Shape {
			s[i] = strconv.Itoa(d)
		}
		shape = "(" + strings.Join(s, ", ") + ")"
	}
	dict := "{'descr': '" + h.Descr + "', 'fortran_order': False, 'shape': " + shape + ", }"
	if len(h.Shape) > 0 {
		// As NumPy does, leave room for the first dimension to grow to
		// growthDigits digits, so that a writer appending rows can
		// rewrite the header in place; the output is then NumPy's, byte
		// for byte.
		dict += strings.Repeat(" ", max(0, growthDigits-len(strconv.Itoa(h.Shape[0]))))
	}
	n := len(magic) + 2 + len(dict) + 1
	pad := (align - n%align) % align
	hlen := len(dict) + pad + 1
	if hlen > 0xffff {
		return 0, fmt.Errorf("%w: %d bytes", ErrHeaderTooLong, hlen)
	}
	buf := make([]byte, 0, n+pad)
	buf = append(buf, magic...)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(hlen))
	buf = append(buf, dict...)
	buf = append(buf, strings.Repeat(" ", pad)...)
	buf = append(buf, '\n')
	m, err := w.Write(buf)
	return int64(m), err
}

// WriteArray writes a as a 1-D .npy array.
func WriteArray[T Elem](w io.Writer, a []T) error {
	if _, err := (Header{Descr: Descr[T](), Shape: []int{len(a)}}).WriteTo(w); err != nil {
		return err
	}
	return writeData(w, a)
}

// WriteScalar writes v as a 0-d .npy array (numpy.load gives shape ()).
func WriteScalar[T Elem](w io.Writer, v T) error {
	if _, err := (Header{Descr: Descr[T]()}).WriteTo(w); err != nil {
		return err
	}
	return writeData(w, []T{v})
}

// dataChunk is how many bytes of data are encoded per Write: large enough
// to amortise the call, small enough not to copy a whole array at once.
const dataChunk = 64 << 10

// writeData writes a in little-endian order, a chunk at a time.
func writeData[T Elem](w io.Writer, a []T) error {
	if len(a) == 0 {
		return nil
	}
	size := binary.Size(a[0])
	per := max(1, dataChunk/size)
	buf := make([]byte, 0, min(len(a), per)*size)
	for i := 0; i < len(a); i += per {
		var err error
		buf, err = binary.Append(buf[:0], binary.LittleEndian, a[i:min(len(a), i+per)])
		if err != nil {
			return fmt.Errorf("npy: encode: %w", err)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
