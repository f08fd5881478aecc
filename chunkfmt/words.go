package chunkfmt

import (
	"encoding/binary"

	"github.com/streamsampler/streamsampler/internal/hostorder"
)

// Words returns b as little-endian uint32 words. On little-endian hosts,
// when b is 4-byte aligned, the result shares b's memory (no copy): do not
// modify it when b is a read-only mapping. Otherwise the words are decoded
// into a new slice. len(b) must be a multiple of 4; a trailing partial word
// is ignored.
func Words(b []byte) []uint32 {
	if w, ok := hostorder.Words(b); ok {
		return w
	}
	return DecodeWords(nil, b)
}

// DecodeWords appends the little-endian words of b to dst (portable path).
func DecodeWords(dst []uint32, b []byte) []uint32 {
	n := len(b) / 4
	if cap(dst)-len(dst) < n {
		nd := make([]uint32, len(dst), len(dst)+n)
		copy(nd, dst)
		dst = nd
	}
	for i := 0; i < n; i++ {
		dst = append(dst, binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst
}

// EncodeWords appends the little-endian encoding of w to dst (portable path).
func EncodeWords(dst []byte, w []uint32) []byte {
	for _, v := range w {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	return dst
}

// wordBytes returns the little-endian encoding of w: a view of w's memory
// on little-endian hosts, a copy elsewhere.
func wordBytes(w []uint32) []byte {
	if hostorder.LittleEndian {
		return hostorder.Bytes(w)
	}
	return EncodeWords(make([]byte, 0, 4*len(w)), w)
}
