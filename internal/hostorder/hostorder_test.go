package hostorder

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestLittleEndianIsNative ties the build-tag constant to the runtime's
// own answer, so that a new architecture missing from the tag list fails
// here rather than silently taking the slow path (or the wrong one).
func TestLittleEndianIsNative(t *testing.T) {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	if native := b[0] == 1; native != LittleEndian {
		t.Fatalf("LittleEndian = %v, but the host stores 1 as %v", LittleEndian, b)
	}
}

func TestBytes(t *testing.T) {
	u := []uint32{1, 0xdeadbeef, 0x01020304}
	i := []int32{-1, 7, -0x01020304}
	for _, tc := range []struct {
		name  string
		got   []byte
		words []uint32
	}{
		{"uint32", Bytes(u), u},
		{"int32", Bytes(i), []uint32{uint32(i[0]), uint32(i[1]), uint32(i[2])}},
	} {
		var want []byte
		for _, w := range tc.words {
			want = binary.NativeEndian.AppendUint32(want, w)
		}
		if !slices.Equal(tc.got, want) {
			t.Errorf("%s: Bytes = %x, want the host-order bytes %x", tc.name, tc.got, want)
		}
	}
	if b := Bytes([]uint32{}); b != nil {
		t.Errorf("Bytes of an empty slice = %v, want nil", b)
	}
	// A view, not a copy.
	Bytes(u)[0] = 9
	if LittleEndian && u[0] != 9 {
		t.Errorf("Bytes copied: u[0] = %d after writing the view", u[0])
	}
}

func TestWords(t *testing.T) {
	words := []uint32{5, 0xcafef00d, 0, 1 << 31}
	buf := make([]uint32, len(words)+1) // uint32 storage: 4-byte aligned
	raw := Bytes(buf)
	for i, w := range words {
		binary.LittleEndian.PutUint32(raw[4*i:], w)
	}
	enc := raw[:4*len(words)+3] // a trailing partial word is left out
	got, ok := Words(enc)
	if ok != LittleEndian {
		t.Fatalf("Words ok = %v on an aligned buffer, want %v", ok, LittleEndian)
	}
	if ok && !slices.Equal(got, words) {
		t.Fatalf("Words = %x, want %x", got, words)
	}
	if _, ok := Words(raw[1 : 1+4*len(words)]); ok {
		t.Fatal("Words viewed a misaligned buffer")
	}
	if got, ok := Words(raw[:3]); ok != LittleEndian || len(got) != 0 {
		t.Fatalf("Words of 3 bytes = %v, %v", got, ok)
	}
}
