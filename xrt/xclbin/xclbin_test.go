package xclbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sample() *Xclbin {
	return &Xclbin{
		UUID:     [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		Platform: "xilinx_u2_gen3x4_xdma_gc_2_202110_1",
		Mems: []Mem{{Type: MemDDR4, Used: true, SizeKB: 4 << 20, BaseAddress: 0x4000000000, Tag: "bank0"},
			{Type: MemHost, Used: false, SizeKB: 1 << 20, Tag: "HOST[0]"}},
		IPs:         []IP{{Type: IPKernel, Properties: IPIntEnable, BaseAddress: 0x1800000, Name: "k:k_1"}},
		Connections: []Connection{{0, 0, 0}, {1, 0, 1}},
		Kernels: []Kernel{{Name: "k", Instances: []string{"k_1"}, Args: []Arg{
			{Name: "a", Index: 0, AddressQualifier: 1, Port: "M_AXI_GMEM", Size: 8, Offset: 0x10, Type: "uint*"},
			{Name: "b", Index: 1, AddressQualifier: 1, Port: "M_AXI_GMEM", Size: 8, Offset: 0x1c, Type: "int*"},
			{Name: "n", Index: 2, Port: "S_AXI_CONTROL", Size: 4, Offset: 0x28, Type: "uint"},
		}}},
	}
}

func TestRoundTrip(t *testing.T) {
	x := sample()
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:8]) != Magic || binary.LittleEndian.Uint64(b[headerOffset:]) != uint64(len(b)) {
		t.Fatal("bad magic or length")
	}
	y, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", y, x)
	}
	path := filepath.Join(t.TempDir(), "a.xclbin")
	if err := WriteFile(path, x); err != nil {
		t.Fatal(err)
	}
	z, err := ReadFile(path)
	if err != nil || !reflect.DeepEqual(x, z) {
		t.Fatalf("ReadFile: %v", err)
	}
	if g, err := x.GroupID("k", 0); err != nil || g != 0 {
		t.Errorf("GroupID(k, 0) = %d, %v", g, err)
	}
	for _, tc := range []struct {
		k   string
		arg int
	}{{"k", 1}, {"k", 2}, {"k", 3}, {"nope", 0}} {
		if _, err := x.GroupID(tc.k, tc.arg); err == nil {
			t.Errorf("GroupID(%s, %d) succeeded", tc.k, tc.arg)
		}
	}
}

func TestMarshalErrors(t *testing.T) {
	for name, mut := range map[string]func(*Xclbin){
		"long tag":      func(x *Xclbin) { x.Mems[0].Tag = "0123456789abcdef" },
		"long ip":       func(x *Xclbin) { x.IPs[0].Name = string(bytes.Repeat([]byte("a"), 64)) },
		"long platform": func(x *Xclbin) { x.Platform = string(bytes.Repeat([]byte("p"), 64)) },
		"arg offset":    func(x *Xclbin) { x.Kernels[0].Args[2].Offset = 0xffe },
	} {
		x := sample()
		mut(x)
		if _, err := x.MarshalBinary(); err == nil {
			t.Errorf("%s: marshalled", name)
		}
	}
}

func TestParseErrors(t *testing.T) {
	good, err := sample().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for name, mut := range map[string]func([]byte) []byte{
		"short":           func(b []byte) []byte { return b[:100] },
		"magic":           func(b []byte) []byte { b[0] = 'X'; return b },
		"length":          func(b []byte) []byte { le.PutUint64(b[headerOffset:], uint64(len(b)+1)); return b },
		"sections":        func(b []byte) []byte { le.PutUint32(b[headerOffset+144:], maxSections+1); return b },
		"section headers": func(b []byte) []byte { le.PutUint32(b[headerOffset+144:], 5000); return b },
		"section offset":  func(b []byte) []byte { le.PutUint64(b[axlfFixed+24:], uint64(len(b))); return b },
		"section size":    func(b []byte) []byte { le.PutUint64(b[axlfFixed+32:], 1<<62); return b },
		"mem count":       func(b []byte) []byte { le.PutUint32(b[le.Uint64(b[axlfFixed+24:]):], 1000); return b },
		"negative ip count": func(b []byte) []byte {
			le.PutUint32(b[le.Uint64(b[axlfFixed+sectionHeaderSize+24:]):], 0xffffffff)
			return b
		},
		"xml": func(b []byte) []byte {
			off := le.Uint64(b[axlfFixed+3*sectionHeaderSize+24:])
			copy(b[off:], "<<<")
			return b
		},
	} {
		b := mut(bytes.Clone(good))
		if _, err := Parse(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	good, err := sample().MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:axlfFixed])
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error not wrapping ErrFormat: %v", err)
			}
			return
		}
		for _, k := range x.Kernels {
			for _, a := range k.Args {
				_, _ = x.GroupID(k.Name, a.Index)
			}
		}
	})
}
