// Package crc32c is the project's one CRC-32C (Castagnoli): the checksum
// of every chunk in manifest.json, of every epoch array, and of a state
// directory's graph fingerprint. hash/crc32 computes it with the SSE4.2 or
// ARMv8 CRC instructions where the CPU has them; this package holds the
// one table that lets it, and Combine, which hash/crc32 lacks.
package crc32c

import (
	"encoding/json"
	"fmt"
	"hash"
	"hash/crc32"
)

// table is built once; hash/crc32 recognises it and uses the CPU's CRC
// instructions.
var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, table) }

// Update returns the CRC-32C of the bytes whose CRC-32C is crc, followed
// by b (Update(0, b) == Checksum(b)).
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, table, b) }

// New returns a hash.Hash32 computing the CRC-32C of what is written to it.
func New() hash.Hash32 { return crc32.New(table) }

// Combine returns the CRC-32C of A||B from crc1 = CRC(A), crc2 =
// CRC(B) and len2 = len(B) (zlib's crc32_combine: multiply crc1 by x^(8
// len2) in GF(2) with matrix squaring, O(log len2)).
func Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1 ^ crc2
	}
	var even, odd [32]uint32
	odd[0] = 0x82F63B78 // the Castagnoli polynomial, reflected
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	for {
		gf2Square(&even, &odd) // the first time: one zero byte
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range 32 {
		square[n] = gf2Times(mat, mat[n])
	}
}

// OfJSON is the CRC-32C of v's JSON encoding: the checksum of the project's
// small metadata files (an epoch's manifest, a state directory's
// config.json and CURRENT). encoding/json writes a struct's fields in
// declaration order, so the encoding is canonical; callers zero v's own
// checksum field first.
func OfJSON(v any) uint32 {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("crc32c: encoding metadata: %v", err)) // plain structs: cannot fail
	}
	return Checksum(b)
}
