package featstore

import (
	"fmt"
	"math"
)

// DType is the element type of the feature matrix. This file is the one
// place that knows how each dtype is encoded: its size, its NumPy
// descriptor, and binary16's conversions (the CLI's JSON, the synthetic
// generator and the npy readers and writers all go through it).
type DType string

// The feature dtypes.
const (
	Float32 DType = "float32"
	Float16 DType = "float16"
	Int8    DType = "int8"
	Uint8   DType = "uint8"
)

// LabelDType is the only element type of labels: little-endian int32,
// NoLabel for a node without one.
const LabelDType = "int32"

// NoLabel is the label of a node that has none (OGB's NaN).
const NoLabel int32 = -1

// Size returns the bytes per element, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case Float16:
		return 2
	case Int8, Uint8:
		return 1
	}
	return 0
}

// ParseDType parses a dtype name: float32, float16, int8 or uint8.
func ParseDType(s string) (DType, error) {
	d := DType(s)
	if d.Size() == 0 {
		return "", fmt.Errorf("%w: dtype %q: want float32, float16, int8 or uint8", ErrShape, s)
	}
	return d, nil
}

// NumPyDescr returns NumPy's descriptor of d as the store holds it
// (little-endian; byte-order-free for one byte): "<f4", "<f2", "|i1" or
// "|u1"; "" for an unknown dtype. An .npy of this descriptor holds the
// store's row bytes as they are.
func (d DType) NumPyDescr() string {
	switch d {
	case Float32:
		return "<f4"
	case Float16:
		return "<f2"
	case Int8:
		return "|i1"
	case Uint8:
		return "|u1"
	}
	return ""
}

// DTypeOfNumPy returns the dtype whose bytes an .npy of descriptor descr
// holds as the store would: little-endian float32 and float16 (native
// order, "=", is taken as little-endian, as the npy readers always have),
// and int8 and uint8 under any byte-order mark; ok is false for any other
// descriptor.
func DTypeOfNumPy(descr string) (d DType, ok bool) {
	switch descr {
	case "<f4", "=f4":
		return Float32, true
	case "<f2", "=f2":
		return Float16, true
	case "|i1", "<i1", "=i1", "i1":
		return Int8, true
	case "|u1", "<u1", "=u1", "u1":
		return Uint8, true
	}
	return "", false
}

// Float16ToFloat32 widens IEEE 754 binary16 h to float32; every binary16
// value, subnormals, infinities and NaN (payload kept) included, is
// exactly a float32.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h) & 0x3FF
	switch {
	case exp == 0x1F: // Inf, NaN (payload kept)
		return math.Float32frombits(sign | 0x7F800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise the mantissa
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3FF)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float16FromFloat32 narrows f to IEEE 754 binary16, rounding to nearest
// even (overflow to ±Inf, NaN kept NaN).
func Float16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xFF) - 127 + 15
	mant := b & 0x7FFFFF
	switch {
	case b&0x7FFFFFFF > 0x7F800000: // NaN
		return sign | 0x7E00
	case exp >= 0x1F: // overflow, or Inf
		return sign | 0x7C00
	case exp <= 0: // subnormal or zero in half precision
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1FFF
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf: correct
	}
	return sign | uint16(half)
}
