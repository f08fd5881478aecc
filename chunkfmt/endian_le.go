//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package chunkfmt

import "unsafe"

// wordsView views b as words in place (the host order is the format's);
// it declines misaligned input.
func wordsView(b []byte) ([]uint32, bool) {
	if len(b) < 4 {
		return []uint32{}, true
	}
	if uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4), true
}

// wordBytes returns the storage bytes of w: a view on little-endian hosts.
func wordBytes(w []uint32) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*4)
}
