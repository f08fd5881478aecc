package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
)

// castagnoli is the reference: hash/crc32's own table, built here
// independently of the package's.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func TestChecksumUpdateNew(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 9, 4096, 100003} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := crc32.Checksum(b, castagnoli)
		h := New()
		h.Write(b[:n/3])
		h.Write(b[n/3:])
		if got := Checksum(b); got != want {
			t.Fatalf("len %d: Checksum %08x, want %08x", n, got, want)
		}
		if got := Update(Update(0, b[:n/2]), b[n/2:]); got != want {
			t.Fatalf("len %d: Update %08x, want %08x", n, got, want)
		}
		if got := h.Sum32(); got != want {
			t.Fatalf("len %d: New %08x, want %08x", n, got, want)
		}
	}
	// The check value of the CRC-32C catalogue entry.
	if got := Checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("Checksum(\"123456789\") = %08x, want e3069283", got)
	}
}

func TestCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, la := range []int{0, 1, 7, 100, 4096} {
		for _, lb := range []int{0, 1, 3, 64, 5000, 1 << 16} {
			a, b := make([]byte, la), make([]byte, lb)
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			want := crc32.Checksum(append(slices.Clone(a), b...), castagnoli)
			if got := Combine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(lb)); got != want {
				t.Fatalf("len %d+%d: combine %08x, want %08x", la, lb, got, want)
			}
		}
	}
}
