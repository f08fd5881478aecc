// Package radix sorts integer keys with a least-significant-digit radix
// sort on bytes: one pass over the keys to count every digit, then one
// stable scatter per digit, skipping digits that are the same for every
// key. It beats comparison sorting from about a thousand keys (and from
// about a hundred when the keys are known to be small); the callers pick
// the crossover, since it depends on their data.
package radix

import "math"

// Uint32 sorts a ascending. Every key must be below 1<<bits (bits from 0
// to 32): only the low bits, rounded up to whole bytes, are sorted on, so
// a smaller bound saves passes and counting. tmp is the second buffer, at least as long as a. Uint32
// returns whichever of a and tmp[:len(a)] holds the result.
func Uint32(a, tmp []uint32, bits int) []uint32 {
	if len(a) <= math.MaxUint32 {
		return lsd[uint32, uint32](a, tmp[:len(a)], 0, bits)
	}
	return lsd[uint32, int](a, tmp[:len(a)], 0, bits)
}

// ByHigh32 sorts a stably by the high 32 bits of each element (the low
// 32 bits are carried along: a (key<<32 | payload) pair). Every key must be
// below 1<<bits (bits from 0 to 32). tmp is the second buffer, at least as
// long as a. ByHigh32 returns whichever of a and tmp[:len(a)] holds the
// result.
func ByHigh32(a, tmp []uint64, bits int) []uint64 {
	if len(a) <= math.MaxUint32 {
		return lsd[uint64, uint32](a, tmp[:len(a)], 32, bits)
	}
	return lsd[uint64, int](a, tmp[:len(a)], 32, bits)
}

// lsd sorts a by bits [low, low+bits) of each element, stably, with tmp
// (as long as a) as the other buffer, and returns the one holding the
// result. C counts the keys per digit value: uint32 whenever it can hold
// len(a), so that the counters take half the cache and half the clearing.
func lsd[K uint32 | uint64, C uint32 | int](a, tmp []K, low, bits int) []K {
	n := len(a)
	digits := (min(max(bits, 0), 32) + 7) / 8
	if n < 2 || digits == 0 {
		return a
	}
	var count [4][256]C
	countDigits(&count, a, uint(low), digits)
	for d := range digits {
		shift := uint(low + 8*d)
		if !offsets(&count[d], int(a[0]>>shift&0xff), n) {
			continue // every key has this digit: the pass would not move anything
		}
		scatter(tmp, a, &count[d], shift)
		a, tmp = tmp, a
	}
	return a
}

// offsets turns the counts of one digit into the position of each digit
// value's first key, unless all n keys have digit value first: then it
// reports false and the pass can be skipped.
func offsets[C uint32 | int](c *[256]C, first, n int) bool {
	if int(c[first]) == n {
		return false
	}
	var sum C
	for i, k := range c {
		c[i] = sum
		sum += k
	}
	return true
}

// scatter moves each key of src to dst at the next position for its digit
// (bits [shift, shift+8)), in order: the stable step of the sort.
func scatter[K uint32 | uint64, C uint32 | int](dst, src []K, pos *[256]C, shift uint) {
	for _, v := range src {
		b := uint8(v >> shift)
		dst[pos[b]] = v
		pos[b]++
	}
}

// countDigits counts the values of the low digits bytes of each key
// (a's elements shifted right by low) in one pass. A loop per digit count
// rather than one over all four: a byte above every key is 0 in every
// element, and counting it would chain each increment on the previous one.
func countDigits[K uint32 | uint64, C uint32 | int](count *[4][256]C, a []K, low uint, digits int) {
	c0, c1, c2, c3 := &count[0], &count[1], &count[2], &count[3]
	switch digits {
	case 1:
		for _, v := range a {
			c0[uint8(v>>low)]++
		}
	case 2:
		for _, v := range a {
			k := v >> low
			c0[uint8(k)]++
			c1[uint8(k>>8)]++
		}
	case 3:
		for _, v := range a {
			k := v >> low
			c0[uint8(k)]++
			c1[uint8(k>>8)]++
			c2[uint8(k>>16)]++
		}
	default:
		for _, v := range a {
			k := v >> low
			c0[uint8(k)]++
			c1[uint8(k>>8)]++
			c2[uint8(k>>16)]++
			c3[uint8(k>>24)]++
		}
	}
}
