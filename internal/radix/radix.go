// Package radix sorts integer keys with a least-significant-digit radix
// sort on bytes: one pass over the keys to count every byte value, then one
// stable scatter per byte, skipping the bytes that are the same in every key
// (so ids below 2^24 take at most three scatters). It beats comparison
// sorting from about a hundred to a thousand keys, depending on the keys;
// the callers pick the crossover for their data.
package radix

import "math"

// Uint32 sorts a ascending. tmp is the second buffer, at least as long as
// a. Uint32 returns whichever of a and tmp[:len(a)] holds the result.
func Uint32(a, tmp []uint32) []uint32 {
	return sortByKey(a, tmp[:len(a)])
}

// ByHigh32 sorts a stably by the high 32 bits of each element, the key;
// the low 32 bits are carried along (a key<<32 | payload pair). tmp is the
// second buffer, at least as long as a. ByHigh32 returns whichever of a
// and tmp[:len(a)] holds the result.
func ByHigh32(a, tmp []uint64) []uint64 {
	return sortByKey(a, tmp[:len(a)])
}

// sortByKey sorts a stably by key, with tmp (as long as a) as the other
// buffer, and returns the one holding the result.
func sortByKey[K uint32 | uint64](a, tmp []K) []K {
	n := len(a)
	if n < 2 {
		return a
	}
	var count [4][256]int
	countBytes(&count, a)
	for d := range count {
		shift := uint(8 * d)
		if !offsets(&count[d], uint8(key(a[0])>>shift), n) {
			continue // every key has this byte: the pass would not move anything
		}
		scatter(tmp, a, &count[d], shift)
		a, tmp = tmp, a
	}
	return a
}

// key returns the key of v: the high 32 bits of a uint64, all of a uint32.
func key[K uint32 | uint64](v K) uint32 {
	if uint64(^K(0)) > math.MaxUint32 {
		return uint32(uint64(v) >> 32)
	}
	return uint32(v)
}

// offsets turns the counts of one byte of the keys into the position of
// each byte value's first key, unless all n keys have byte value first:
// then it reports false and the pass can be skipped.
func offsets(c *[256]int, first uint8, n int) bool {
	if c[first] == n {
		return false
	}
	sum := 0
	for i, k := range c {
		c[i] = sum
		sum += k
	}
	return true
}

// countBytes and scatter, the loops over the keys, are written out for
// each element type and picked by a type switch once per pass: the same
// loops as generic code were 10-25% slower (thread CPU time, 128 to 1.5 M
// keys), and slower than the copies this package replaced.

// countBytes counts the values of each byte of the keys of a.
func countBytes[K uint32 | uint64](count *[4][256]int, a []K) {
	switch a := any(a).(type) {
	case []uint32:
		countUint32(count, a)
	case []uint64:
		countHigh32(count, a)
	}
}

// scatter moves each element of src to dst at pos of its key's byte
// (bits [shift, shift+8)), in order, advancing that position: the stable
// step of the sort.
func scatter[K uint32 | uint64](dst, src []K, pos *[256]int, shift uint) {
	switch src := any(src).(type) {
	case []uint32:
		scatterUint32(any(dst).([]uint32), src, pos, shift)
	case []uint64:
		scatterHigh32(any(dst).([]uint64), src, pos, shift)
	}
}

func countUint32(count *[4][256]int, a []uint32) {
	c0, c1, c2, c3 := &count[0], &count[1], &count[2], &count[3]
	for _, k := range a {
		c0[uint8(k)]++
		c1[uint8(k>>8)]++
		c2[uint8(k>>16)]++
		c3[k>>24]++
	}
}

func scatterUint32(dst, src []uint32, pos *[256]int, shift uint) {
	shift &= 31
	for _, v := range src {
		b := uint8(v >> shift)
		dst[pos[b]] = v
		pos[b]++
	}
}

func scatterHigh32(dst, src []uint64, pos *[256]int, shift uint) {
	shift = 32 + shift&31
	for _, v := range src {
		b := uint8(v >> shift)
		dst[pos[b]] = v
		pos[b]++
	}
}

func countHigh32(count *[4][256]int, a []uint64) {
	c0, c1, c2, c3 := &count[0], &count[1], &count[2], &count[3]
	for _, v := range a {
		k := uint32(v >> 32)
		c0[uint8(k)]++
		c1[uint8(k>>8)]++
		c2[uint8(k>>16)]++
		c3[k>>24]++
	}
}
