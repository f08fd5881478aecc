package hls

import (
	"encoding/binary"
	"slices"
	"testing"
)

func wordsToBytes(w []uint32) []byte {
	b := make([]byte, 0, 4*len(w))
	for _, v := range w {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func bytesToWords(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// FuzzRun feeds arbitrary chunks and targets to Run and Reference: Run
// must never crash (validation keeps the C++ kernel inside the slices) and
// must agree with Reference, error for error and slot for slot; so must
// RunEdges and ReferenceEdges, whose samples are Run's and whose edge
// indices point at the neighbor words sampled.
func FuzzRun(f *testing.F) {
	nb := make([]uint32, 100)
	for i := range nb {
		nb[i] = uint32(100 + i)
	}
	f.Add(wordsToBytes(buildChunk(5, [][]uint32{nil, {1}, nb, {3, 9}, nil}, 3)), wordsToBytes([]uint32{7, 8, 5}), uint8(5), uint64(0xa759ea27d4727622), false)
	f.Add(wordsToBytes(buildChunk(0, [][]uint32{{1, 2, 3}, {4}}, 0)), wordsToBytes([]uint32{0, 1, 1}), uint8(2), uint64(1), true)
	f.Add([]byte{1, 0, 0, 0}, []byte{0, 0, 0, 0}, uint8(1), uint64(0), false)
	f.Fuzz(func(t *testing.T, chunkBytes, targetBytes []byte, fanout uint8, key uint64, replace bool) {
		chunk, targets := bytesToWords(chunkBytes), bytesToWords(targetBytes)
		k := int(fanout)
		n := len(targets) * k
		if k == 0 || k > MaxFanout {
			n = len(targets)
		}
		got, want := make([]int32, n), make([]int32, n)
		errGot := Run(chunk, targets, got, k, key, replace)
		errWant := Reference(chunk, targets, want, k, key, replace)
		if (errGot == nil) != (errWant == nil) || (errGot != nil && errGot.Error() != errWant.Error()) {
			t.Fatalf("Run error %v, Reference error %v", errGot, errWant)
		}
		if errGot == nil && !slices.Equal(got, want) {
			t.Fatalf("Run %v, Reference %v", got, want)
		}
		gotE, wantE := make([]int32, n), make([]int32, n)
		gotS, wantS := make([]int32, n), make([]int32, n)
		errGot = RunEdges(chunk, targets, gotS, gotE, k, key, replace)
		errWant = ReferenceEdges(chunk, targets, wantS, wantE, k, key, replace)
		if (errGot == nil) != (errWant == nil) || (errGot != nil && errGot.Error() != errWant.Error()) {
			t.Fatalf("RunEdges error %v, ReferenceEdges error %v", errGot, errWant)
		}
		if errGot != nil {
			return
		}
		if !slices.Equal(gotS, want) || !slices.Equal(wantS, want) || !slices.Equal(gotE, wantE) {
			t.Fatalf("RunEdges %v %v, ReferenceEdges %v %v, Run %v", gotS, gotE, wantS, wantE, want)
		}
		if len(targets) == 0 {
			return
		}
		first := 3 + int(chunk[0])
		for i, e := range gotE {
			if (e < 0 && (e != -1 || want[i] != -1)) || (e >= 0 && int32(chunk[first+int(e)]) != want[i]) {
				t.Fatalf("slot %d: sample %d, edge index %d", i, want[i], e)
			}
		}
	})
}
