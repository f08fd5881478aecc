package ingest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// parseTextOracle is the text scanner as it was before the line fast path
// (commit 3f8436c), kept as the oracle of parseText in FuzzParseText: the
// same edges, line count, error line, message and kind on every input.
// It parses the complete lines of b into pairs (capacity at least
// len(b)/2+2); ids must be below limit; when header is set, a first line
// that is not an edge but holds a letter is skipped as a CSV header.
func parseTextOracle(b []byte, pairs []uint32, limit uint64, numGiven, header bool) (res textResult) {
	pairs = pairs[:cap(pairs)]
	np := 0
	var line int64
	var start, start2 int
	var u, v uint64
	var sep, comma bool
	i, n := 0, len(b)
	for i < n {
		c := b[i]
		if c-'0' > 9 {
			for c == ' ' || c == '\t' {
				i++
				if i == n {
					goto done
				}
				c = b[i]
			}
			switch c {
			case '\n':
				line++
				i++
				continue
			case '\r':
				if i+1 == n || b[i+1] == '\n' {
					i += 2
					line++
					continue
				}
			case '#', '%':
				j := bytes.IndexByte(b[i:], '\n')
				if j < 0 {
					i = n
					goto done
				}
				i += j + 1
				line++
				continue
			}
			if c-'0' > 9 {
				if header && line == 0 && hasLetter(lineAt(b, i)) {
					goto skipHeader
				}
				return syntaxErr(b, i, line, pairs[:np])
			}
		}
		// First id.
		start = i
		u, i = scanUintOracle(b, i)
		if i-start > 18 {
			u = longID(b[start:i])
		}
		// Separator: blanks with at most one comma among them.
		sep, comma = false, false
		for i < n {
			c := b[i]
			if c == ' ' || c == '\t' {
				sep = true
			} else if c == ',' && !comma {
				sep, comma = true, true
			} else {
				break
			}
			i++
		}
		if !sep || i == n || b[i]-'0' > 9 {
			if header && line == 0 && hasLetter(lineAt(b, start)) {
				goto skipHeader
			}
			return syntaxErr(b, i, line, pairs[:np])
		}
		// Second id.
		start2 = i
		v, i = scanUintOracle(b, i)
		if i-start2 > 18 {
			v = longID(b[start2:i])
		}
		// End of line: trailing blanks, an optional CR, then LF or the end.
		for i < n && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		if i < n && b[i] == '\r' {
			i++
		}
		if i < n {
			if b[i] != '\n' {
				if header && line == 0 && hasLetter(lineAt(b, start)) {
					goto skipHeader
				}
				return syntaxErr(b, i, line, pairs[:np])
			}
			i++
		}
		if u >= limit || v >= limit {
			bad, at := u, start
			if u < limit {
				bad, at = v, start2
			}
			res.pairs = pairs[:np]
			res.errLine = line
			res.errKind = ErrIDRange
			if bad >= 1<<63 {
				res.errMsg = "node id " + tokenAt(b, at) + rangeMsg(0, limit, numGiven)[len("node id 0"):]
			} else {
				res.errMsg = rangeMsg(bad, limit, numGiven)
			}
			return res
		}
		pairs[np] = uint32(u)
		pairs[np+1] = uint32(v)
		np += 2
		line++
		continue
	skipHeader:
		// The first line of a file is not an edge but has a letter: a
		// CSV header such as "id_1,id_2". Only line 0 gets here.
		if j := bytes.IndexByte(b, '\n'); j < 0 {
			i = n
		} else {
			i = j + 1
			line++
		}
	}
done:
	res.pairs = pairs[:np]
	res.lines = int64(bytes.Count(b, []byte{'\n'}))
	return res
}

// scanUintOracle is scanUint as it was then: it reads the decimal digits at b[i:] (possibly none) and returns
// their value (wrapped if longer than 19 digits; callers check the digit
// count) and the index after them. Where 8 bytes are available it works
// on them at once (SWAR): find the first non-digit with a borrow-safe
// mask, then combine up to 8 digits with three multiplications.
func scanUintOracle(b []byte, i int) (uint64, int) {
	if i+8 <= len(b) {
		t := binary.LittleEndian.Uint64(b[i:]) - 0x3030303030303030
		// A byte is a digit iff it is now ≤ 9. Borrows and carries only
		// run towards later bytes, so the first non-digit is flagged
		// correctly whatever follows it.
		m := (t | (t + 0x7676767676767676)) & 0x8080808080808080
		if m != 0 {
			n := bits.TrailingZeros64(m) >> 3
			if n == 0 {
				return 0, i
			}
			// The n digits to the top, zeros (leading zeros) below.
			t <<= 64 - 8*uint(n)
			t = (t * 10) + (t >> 8)
			t = ((t & 0x00FF00FF00FF00FF) * (100<<16 + 1)) >> 16
			t = ((t & 0x0000FFFF0000FFFF) * (10000<<32 + 1)) >> 32
			return t & 0xFFFFFFFF, i + n
		}
	}
	var x uint64
	for i < len(b) {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		x = x*10 + uint64(d)
		i++
	}
	return x, i
}
