package featstore

import (
	"math"
	"testing"
)

// TestFloat16FromFloat32 checks the float32 → binary16 conversion on values
// with known encodings, the rounding boundaries (ties to even), the
// subnormal range, overflow and NaN, and that every binary16 value
// round-trips (decoded exactly to float32, encoded back to itself), both
// through an independent decoder and through Float16ToFloat32.
func TestFloat16FromFloat32(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{0, 0x0000}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3C00}, {-2, 0xC000}, {0.5, 0x3800},
		{65504, 0x7BFF}, {65519.99, 0x7BFF}, {65520, 0x7C00}, {1e6, 0x7C00}, {float32(math.Inf(-1)), 0xFC00},
		{0.1, 0x2E66}, {1.0 / 3, 0x3555},
		{float32(math.Ldexp(1, -24)), 0x0001},     // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},     // half of it: a tie, to even (0)
		{float32(math.Ldexp(3, -25)), 0x0002},     // 1.5 ulp: a tie, to even (2)
		{float32(math.Ldexp(1, -14)), 0x0400},     // smallest normal
		{1 + float32(math.Ldexp(1, -11)), 0x3C00}, // tie between 1 and 1+2^-10: to even
		{1 + float32(math.Ldexp(3, -11)), 0x3C02}, // tie between 1+2^-10 and 1+2^-9: to even
	} {
		if got := Float16FromFloat32(c.f); got != c.want {
			t.Errorf("Float16FromFloat32(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := Float16FromFloat32(float32(math.NaN())); got&0x7C00 != 0x7C00 || got&0x3FF == 0 {
		t.Errorf("NaN -> %#04x", got)
	}
	decode := func(h uint16) float32 {
		sign := float32(1 - 2*float64(h>>15))
		e, m := int(h>>10&0x1F), float64(h&0x3FF)
		switch e {
		case 0:
			return sign * float32(math.Ldexp(m, -24))
		case 0x1F:
			return sign * float32(math.Inf(1))
		}
		return sign * float32(math.Ldexp(1024+m, e-25))
	}
	for h := range 1 << 16 {
		if h>>10&0x1F == 0x1F && h&0x3FF != 0 {
			continue // NaN payloads
		}
		if got := Float16FromFloat32(decode(uint16(h))); got != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, decode(uint16(h)), got)
		}
		if got := Float16ToFloat32(uint16(h)); math.Float32bits(got) != math.Float32bits(decode(uint16(h))) {
			t.Fatalf("Float16ToFloat32(%#04x) = %g, want %g", h, got, decode(uint16(h)))
		}
	}
}

// TestFloat16NaN: a binary16 NaN widens to a float32 NaN with its
// payload, and narrows back to a NaN.
func TestFloat16NaN(t *testing.T) {
	for _, h := range []uint16{0x7E00, 0x7C01, 0xFE00, 0x7FFF} {
		f := Float16ToFloat32(h)
		if !math.IsNaN(float64(f)) || math.Float32bits(f)&0x7FFFFF != uint32(h&0x3FF)<<13 {
			t.Errorf("%#04x -> %#08x", h, math.Float32bits(f))
		}
		if back := Float16FromFloat32(f); back&0x7C00 != 0x7C00 || back&0x3FF == 0 {
			t.Errorf("%#04x -> %g -> %#04x: not a NaN", h, f, back)
		}
	}
}

// TestNumPyDescr: every dtype's descriptor is NumPy's for its size and
// kind, and reads back as the dtype; the accepted aliases and refused
// descriptors are those the npy readers have always had.
func TestNumPyDescr(t *testing.T) {
	for _, tc := range []struct {
		d     DType
		descr string
	}{{Float32, "<f4"}, {Float16, "<f2"}, {Int8, "|i1"}, {Uint8, "|u1"}, {"float64", ""}} {
		if got := tc.d.NumPyDescr(); got != tc.descr {
			t.Errorf("%s: descr %q, want %q", tc.d, got, tc.descr)
		}
		if tc.descr == "" {
			continue
		}
		if d, ok := DTypeOfNumPy(tc.descr); !ok || d != tc.d {
			t.Errorf("%q reads as %q (%v), want %s", tc.descr, d, ok, tc.d)
		}
	}
	for descr, want := range map[string]DType{"=f4": Float32, "=f2": Float16, "<i1": Int8, "=i1": Int8, "i1": Int8, "<u1": Uint8, "=u1": Uint8, "u1": Uint8} {
		if d, ok := DTypeOfNumPy(descr); !ok || d != want {
			t.Errorf("%q reads as %q (%v), want %s", descr, d, ok, want)
		}
	}
	for _, descr := range []string{">f4", ">f2", "<f8", "<i4", "|b1", "", "f4"} {
		if d, ok := DTypeOfNumPy(descr); ok {
			t.Errorf("%q accepted as %s", descr, d)
		}
	}
}
