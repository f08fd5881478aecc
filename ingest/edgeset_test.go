package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/internal/npy"
)

func writeEdgeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func npyArr[T npy.Elem](t testing.TB, shape []int, a []T) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := (npy.Header{Descr: npy.Descr[T](), Shape: shape}).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := binary.Write(&b, binary.LittleEndian, a); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadEdgePairs(t *testing.T) {
	tests := []struct {
		name, file string
		data       []byte
		src, dst   []uint32
		f32        []float32
		i64        []int64
		err        string // substring of the error, "" for none
	}{
		{name: "text", file: "e.txt", data: []byte("# pairs\n0 1\n\n2\t3\n4,0\n"), src: []uint32{0, 2, 4}, dst: []uint32{1, 3, 0}},
		{name: "int labels", file: "e.txt", data: []byte("0 1 1\n2 3 0\n"), src: []uint32{0, 2}, dst: []uint32{1, 3}, i64: []int64{1, 0}},
		{name: "float labels", file: "e.txt", data: []byte("0 1 1\n2 3 0.5\n"), src: []uint32{0, 2}, dst: []uint32{1, 3}, f32: []float32{1, 0.5}},
		{name: "node range", file: "e.txt", data: []byte("0 1\n2 5\n"), err: "e.txt:2: node 5 is out of range: nodes must be below the graph's 5 nodes"},
		{name: "syntax", file: "e.txt", data: []byte("0 1\nx 2\n"), err: `e.txt:2: found "x", expected a non-negative integer node id`},
		{name: "fields", file: "e.txt", data: []byte("0 1\n2 3 1\n"), err: "e.txt:2: 3 fields, expected 2"},
		{name: "empty", file: "e.txt", data: []byte("# nothing\n"), err: "no pairs"},
		{name: "npy 2xE", file: "e.npy", data: npyArr(t, []int{2, 3}, []int64{0, 1, 2, 4, 3, 0}), src: []uint32{0, 1, 2}, dst: []uint32{4, 3, 0}},
		{name: "npy Ex2", file: "e.npy", data: npyArr(t, []int{3, 2}, []int32{0, 4, 1, 3, 2, 0}), src: []uint32{0, 1, 2}, dst: []uint32{4, 3, 0}},
		{name: "npy u32", file: "e.npy", data: npyArr(t, []int{3, 2}, []uint32{0, 4, 1, 3, 2, 0}), src: []uint32{0, 1, 2}, dst: []uint32{4, 3, 0}},
		{name: "npy range", file: "e.npy", data: npyArr(t, []int{2, 2}, []int64{0, 1, 7, 2}), err: "e.npy: edge 0: node 7 of pair (0, 7) is out of range: nodes must be in [0, 5)"},
		{name: "npy negative", file: "e.npy", data: npyArr(t, []int{2, 1}, []int64{-3, 1}), err: "node -3 of pair (-3, 1) is out of range"},
		{name: "npy shape", file: "e.npy", data: npyArr(t, []int{3}, []int64{0, 1, 2}), err: "not an edge array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ReadEdgePairs(writeEdgeFile(t, tc.file, tc.data), 5)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Fatalf("error %T, want *InputError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Src, tc.src) || !slices.Equal(p.Dst, tc.dst) || !slices.Equal(p.LabelsF32, tc.f32) || !slices.Equal(p.LabelsI64, tc.i64) {
				t.Fatalf("got %v %v %v %v, want %v %v %v %v", p.Src, p.Dst, p.LabelsF32, p.LabelsI64, tc.src, tc.dst, tc.f32, tc.i64)
			}
		})
	}
}

func TestReadEdgeLabelsAndIDs(t *testing.T) {
	f, i, err := ReadEdgeLabels(writeEdgeFile(t, "l.npy", npyArr(t, []int{3}, []float32{1, 0, 2.5})), 3)
	if err != nil || !slices.Equal(f, []float32{1, 0, 2.5}) || i != nil {
		t.Fatalf("float32 labels: %v %v %v", f, i, err)
	}
	f, i, err = ReadEdgeLabels(writeEdgeFile(t, "l.npy", npyArr(t, []int{2}, []int64{3, -1})), 2)
	if err != nil || f != nil || !slices.Equal(i, []int64{3, -1}) {
		t.Fatalf("int64 labels: %v %v %v", f, i, err)
	}
	if _, _, err := ReadEdgeLabels(writeEdgeFile(t, "l.npy", npyArr(t, []int{2}, []int64{3, -1})), 3); err == nil || !strings.Contains(err.Error(), "expected (3,)") {
		t.Fatalf("wrong count: %v", err)
	}
	ids, err := ReadEdgeIDs(writeEdgeFile(t, "r.npy", npyArr(t, []int{3}, []int64{2, -1, 0})), 3, true)
	if err != nil || !slices.Equal(ids, []int64{2, -1, 0}) {
		t.Fatalf("reverse ids: %v %v", ids, err)
	}
	if _, err := ReadEdgeIDs(writeEdgeFile(t, "r.npy", npyArr(t, []int{2}, []int64{2, -1})), 3, false); err == nil || !strings.Contains(err.Error(), "edge id -1 (index 1)") {
		t.Fatalf("-1 without allowNone: %v", err)
	}
	if _, err := ReadEdgeIDs(writeEdgeFile(t, "r.npy", npyArr(t, []int{1}, []uint32{3})), 3, false); err == nil || !strings.Contains(err.Error(), "edge id 3") {
		t.Fatalf("id past the edges: %v", err)
	}
}

// FuzzReadEdgePairs: the text and npy readers never panic, and what they
// accept is pairs of nodes below the limit with labels for every pair or
// none; a text input accepted is accepted again with its lines in a
// CRLF rendering. Seeds are in testdata/fuzz/FuzzReadEdgePairs.
func FuzzReadEdgePairs(f *testing.F) {
	for _, s := range []string{"0 1\n2 3\n", "0 1 1\n1 2 0.5\n", "# c\n\n1,2\n", "1 2 3 4\n", "9 1\n", "\x93NUMPY\x01\x00"} {
		f.Add([]byte(s))
	}
	f.Add(npyArr(f, []int{2, 2}, []int64{0, 1, 2, 3}))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 8
		var p *EdgePairs
		var err error
		if bytes.HasPrefix(data, magicNPY) {
			p, err = readEdgePairsNPY(bufio.NewReader(bytes.NewReader(data)), "f.npy", limit)
		} else {
			p, err = readEdgePairsText(bufio.NewReader(bytes.NewReader(data)), "f.txt", limit)
		}
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("%q: error %T %v, want *InputError", data, err, err)
			}
			return
		}
		if len(p.Src) == 0 || len(p.Src) != len(p.Dst) {
			t.Fatalf("%q: %d sources, %d destinations", data, len(p.Src), len(p.Dst))
		}
		for i := range p.Src {
			if p.Src[i] >= limit || p.Dst[i] >= limit {
				t.Fatalf("%q: pair %d (%d, %d) past the limit", data, i, p.Src[i], p.Dst[i])
			}
		}
		if (p.LabelsF32 != nil && len(p.LabelsF32) != len(p.Src)) || (p.LabelsI64 != nil && len(p.LabelsI64) != len(p.Src)) {
			t.Fatalf("%q: labels for some pairs only", data)
		}
	})
}
