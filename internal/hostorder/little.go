//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package hostorder

// LittleEndian is true: this architecture stores integers least
// significant byte first (the list is encoding/binary's NativeEndian's).
const LittleEndian = true
