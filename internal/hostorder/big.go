//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package hostorder

// LittleEndian is false: this architecture stores integers most
// significant byte first, so words must be encoded and decoded.
const LittleEndian = false
