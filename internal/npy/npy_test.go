package npy

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHeaderBytes pins the exact bytes NumPy 1.24's np.save writes for
// tiny arrays (captured from it): magic, version, little-endian header
// length, the dict with its growth space, padding to 128 bytes, data.
func TestHeaderBytes(t *testing.T) {
	pad := func(n int) string { return strings.Repeat(" ", n) }
	for _, tc := range []struct {
		name  string
		write func(w *bytes.Buffer) error
		want  string
	}{
		{"u4-vector", func(w *bytes.Buffer) error { return WriteArray(w, []uint32{1, 2}) },
			"\x93NUMPY\x01\x00v\x00{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }" + pad(60) + "\n\x01\x00\x00\x00\x02\x00\x00\x00"},
		{"u4-scalar", func(w *bytes.Buffer) error { return WriteScalar(w, uint32(7)) },
			"\x93NUMPY\x01\x00v\x00{'descr': '<u4', 'fortran_order': False, 'shape': (), }" + pad(62) + "\n\x07\x00\x00\x00"},
		{"i4-empty", func(w *bytes.Buffer) error { return WriteArray(w, []int32{}) },
			"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }" + pad(60) + "\n"},
		{"i8-matrix-header", func(w *bytes.Buffer) error {
			_, err := Header{Descr: "<i8", Shape: []int{2, 3}}.WriteTo(w)
			return err
		}, "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }" + pad(58) + "\n"}, // 20 of growth space, 38 of alignment
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("got  %q\nwant %q", b.String(), tc.want)
			}
		})
	}
}

// TestHeaderAlignment: whatever the shape, the data starts on a 64-byte
// boundary and the length field says where.
func TestHeaderAlignment(t *testing.T) {
	for _, shape := range [][]int{nil, {0}, {1}, {12345678901}, {3, 4, 5}, {1, 1, 1, 1, 1, 1, 1, 1}} {
		var b bytes.Buffer
		n, err := Header{Descr: "<f8", Shape: shape}.WriteTo(&b)
		if err != nil || int(n) != b.Len() || b.Len()%align != 0 || b.Bytes()[b.Len()-1] != '\n' {
			t.Fatalf("shape %v: %d bytes (%v), header %q", shape, b.Len(), err, b.String())
		}
		if hl := int(b.Bytes()[8]) | int(b.Bytes()[9])<<8; hl+10 != b.Len() {
			t.Fatalf("shape %v: header length field %d, header is %d bytes", shape, hl, b.Len()-10)
		}
	}
	if _, err := (Header{Descr: "<f8", Shape: make([]int, 30000)}).WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrHeaderTooLong) {
		t.Fatalf("huge shape: got %v", err)
	}
}

func TestDescr(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Descr[uint8](), "|u1"}, {Descr[int8](), "|i1"}, {Descr[uint16](), "<u2"}, {Descr[int16](), "<i2"},
		{Descr[uint32](), "<u4"}, {Descr[int32](), "<i4"}, {Descr[uint64](), "<u8"}, {Descr[int64](), "<i8"},
		{Descr[float32](), "<f4"}, {Descr[float64](), "<f8"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

// TestWriteDataChunks checks the little-endian data across chunk
// boundaries (arrays longer than one 64 KiB encoding chunk).
func TestWriteDataChunks(t *testing.T) {
	a := make([]uint32, dataChunk/4*2+3)
	for i := range a {
		a[i] = uint32(i) * 2654435761
	}
	var b bytes.Buffer
	if err := WriteArray(&b, a); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()[128:]
	if len(data) != 4*len(a) {
		t.Fatalf("%d data bytes, want %d", len(data), 4*len(a))
	}
	for i, v := range a {
		if got := uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24; got != v {
			t.Fatalf("element %d: %d, want %d", i, got, v)
		}
	}
}

func TestNPZRejectsDuplicateNames(t *testing.T) {
	z := NewNPZWriter(&bytes.Buffer{})
	if err := AddArray(z, "a", []int32{1}); err != nil {
		t.Fatal(err)
	}
	if err := AddArray(z, "a", []int32{2}); err == nil {
		t.Fatal("duplicate name accepted")
	}
	if _, err := z.Create(""); err == nil {
		t.Fatal("empty name accepted")
	}
}

// numpyPython returns /usr/bin/python3 if it imports numpy, else skips.
func numpyPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s with numpy not available: %v", py, err)
	}
	return py
}

// TestNumpyRoundTrip writes an .npz of every element type (empty, scalar
// and multi-chunk arrays included) and has NumPy load it: dtypes, shapes
// and values must come back, and np.save of each loaded array must give
// the very bytes of the member.
func TestNumpyRoundTrip(t *testing.T) {
	py := numpyPython(t)
	r := rand.New(rand.NewPCG(1, 2))
	u32 := make([]uint32, 40000)
	for i := range u32 {
		u32[i] = r.Uint32()
	}
	i64 := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	f64 := []float64{-1.5, 0, math.Pi, 1e300}
	var buf bytes.Buffer
	z := NewNPZWriter(&buf)
	for _, err := range []error{
		AddArray(z, "u8", []uint8{0, 255, 7}),
		AddArray(z, "i8", []int8{-128, 127}),
		AddArray(z, "u16", []uint16{65535, 1}),
		AddArray(z, "i16", []int16{-32768, 5}),
		AddArray(z, "u32", u32),
		AddArray(z, "i32", []int32{-1, math.MaxInt32, math.MinInt32}),
		AddArray(z, "u64", []uint64{math.MaxUint64, 0}),
		AddArray(z, "i64", i64),
		AddArray(z, "f32", []float32{0.25, -2}),
		AddArray(z, "f64", f64),
		AddArray(z, "empty", []int32{}),
		AddScalar(z, "scalar", uint32(42)),
		z.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const script = `
import io, json, sys, zipfile
import numpy as np
out = {}
with np.load(sys.argv[1]) as d, zipfile.ZipFile(sys.argv[1]) as zf:
    for k in d.files:
        a = d[k]
        b = io.BytesIO(); np.save(b, a)
        out[k] = {"dtype": a.dtype.str, "shape": list(a.shape), "same_bytes": b.getvalue() == zf.read(k + ".npy"),
                  "values": [str(x) for x in a.reshape(-1).tolist()]}
json.dump(out, sys.stdout)
`
	o, err := exec.Command(py, "-c", script, p).Output()
	if err != nil {
		t.Fatalf("numpy: %v", err)
	}
	var got map[string]struct {
		Dtype     string   `json:"dtype"`
		Shape     []int    `json:"shape"`
		SameBytes bool     `json:"same_bytes"`
		Values    []string `json:"values"`
	}
	if err := json.Unmarshal(o, &got); err != nil {
		t.Fatal(err)
	}
	strs := func(n int, f func(i int) string) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	u32s := strs(len(u32), func(i int) string { return jsonNum(u32[i]) })
	for name, want := range map[string]struct {
		dtype  string
		shape  []int
		values []string
	}{
		"u8":     {"|u1", []int{3}, []string{"0", "255", "7"}},
		"i8":     {"|i1", []int{2}, []string{"-128", "127"}},
		"u16":    {"<u2", []int{2}, []string{"65535", "1"}},
		"i16":    {"<i2", []int{2}, []string{"-32768", "5"}},
		"u32":    {"<u4", []int{len(u32)}, u32s},
		"i32":    {"<i4", []int{3}, []string{"-1", "2147483647", "-2147483648"}},
		"u64":    {"<u8", []int{2}, []string{"18446744073709551615", "0"}},
		"i64":    {"<i8", []int{5}, []string{"-9223372036854775808", "-1", "0", "1", "9223372036854775807"}},
		"f32":    {"<f4", []int{2}, []string{"0.25", "-2.0"}},
		"f64":    {"<f8", []int{4}, []string{"-1.5", "0.0", "3.141592653589793", "1e+300"}},
		"empty":  {"<i4", []int{0}, []string{}},
		"scalar": {"<u4", []int{}, []string{"42"}},
	} {
		g, ok := got[name]
		if !ok {
			t.Fatalf("%s: missing from the archive numpy read", name)
		}
		if g.Dtype != want.dtype || !slices.Equal(g.Shape, want.shape) || !slices.Equal(g.Values, want.values) {
			t.Errorf("%s: numpy read dtype %s shape %v values %.80v; want %s %v %.80v", name, g.Dtype, g.Shape, g.Values, want.dtype, want.shape, want.values)
		}
		if !g.SameBytes {
			t.Errorf("%s: np.save writes different bytes", name)
		}
	}
	if len(got) != 12 {
		t.Errorf("numpy read %d arrays, want 12", len(got))
	}
	// Members are stored uncompressed.
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want stored", f.Name, f.Method)
		}
	}
}

func jsonNum(v uint32) string { b, _ := json.Marshal(v); return string(b) }
