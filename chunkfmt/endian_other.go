//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package chunkfmt

func wordsView(b []byte) ([]uint32, bool) { return nil, false }

// wordBytes returns the little-endian encoding of w (a copy on big-endian
// hosts).
func wordBytes(w []uint32) []byte { return EncodeWords(make([]byte, 0, 4*len(w)), w) }
