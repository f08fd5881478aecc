package serve

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/internal/npy"
)

// FuzzDecodeHeteroSplitRequest: the heterogeneous split request decoder
// never panics, and what it accepts encodes back to the same payload.
func FuzzDecodeHeteroSplitRequest(f *testing.F) {
	f.Add(AppendHeteroSplitRequest(nil, 64, 1, []uint32{5, 1, 9}))
	f.Add(AppendHeteroSplitRequest(nil, 1, 0, nil))
	f.Add([]byte{1, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, p []byte) {
		bs, ty, nodes, err := DecodeHeteroSplitRequest(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if again := AppendHeteroSplitRequest(nil, bs, ty, nodes); !bytes.Equal(again, p) {
			t.Fatalf("payload %x decodes to (%d, %d, %v), which encodes to %x", p, bs, ty, nodes, again)
		}
	})
}

// labelsNPY is a labels file of the given int64 labels.
func labelsNPY(t testing.TB, y []int64) []byte {
	var b bytes.Buffer
	if err := npy.WriteArray(&b, y); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzDecodeNodeLabelsNPY: a labels file decoder never panics; what it
// accepts has exactly count labels, each -1 or a class.
func FuzzDecodeNodeLabelsNPY(f *testing.F) {
	f.Add(labelsNPY(f, []int64{0, -1, 7}), uint32(3))
	f.Add(labelsNPY(f, []int64{0, -1, 7}), uint32(4))
	f.Add(labelsNPY(f, []int64{-2}), uint32(1))
	f.Fuzz(func(t *testing.T, p []byte, count uint32) {
		count %= 1 << 16 // a bound on what a fuzzed header makes it allocate
		l, err := DecodeNodeLabelsNPY(bytes.NewReader(p), count)
		if err != nil {
			if !errors.Is(err, ErrLabelsFile) {
				t.Fatalf("error %v is not ErrLabelsFile", err)
			}
			return
		}
		if len(l) != int(count) || slices.ContainsFunc(l, func(v int32) bool { return v < -1 }) {
			t.Fatalf("accepted %d labels %v for %d nodes", len(l), l, count)
		}
	})
}

// Labels files: int64 and int32 arrays of one label per node are read;
// another length, a label below -1 or above int32, another dtype, a
// truncated file or trailing bytes are refused naming what is wrong.
func TestDecodeNodeLabelsNPY(t *testing.T) {
	good := labelsNPY(t, []int64{0, -1, 7})
	l, err := DecodeNodeLabelsNPY(bytes.NewReader(good), 3)
	if err != nil || !slices.Equal(l, NodeLabels{0, -1, 7}) {
		t.Fatalf("labels %v: %v", l, err)
	}
	var b32 bytes.Buffer
	if err := npy.WriteArray(&b32, []int32{4, -1}); err != nil {
		t.Fatal(err)
	}
	if l, err := DecodeNodeLabelsNPY(bytes.NewReader(b32.Bytes()), 2); err != nil || !slices.Equal(l, NodeLabels{4, -1}) {
		t.Fatalf("int32 labels %v: %v", l, err)
	}
	var f32 bytes.Buffer
	if err := npy.WriteArray(&f32, []float32{1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		p     []byte
		count uint32
		want  string
	}{
		{"length", good, 4, "shape [3], want (4,)"},
		{"below -1", labelsNPY(t, []int64{-2}), 1, "label -2 of node 0"},
		{"above int32", labelsNPY(t, []int64{1 << 31}), 1, "label 2147483648 of node 0"},
		{"dtype", f32.Bytes(), 1, `dtype "<f4"`},
		{"truncated", good[:len(good)-1], 3, "truncated: 2 of 3 labels"},
		{"trailing", append(slices.Clone(good), 0), 3, "bytes after the 3 labels"},
		{"not npy", []byte("0,1,2\n"), 3, "not a .npy file"},
	} {
		_, err := DecodeNodeLabelsNPY(bytes.NewReader(tc.p), tc.count)
		if !errors.Is(err, ErrLabelsFile) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want ErrLabelsFile naming %q", tc.name, err, tc.want)
		}
	}
}
