package ingest

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// FuzzParseText checks the byte scanner against two oracles: the
// scanner as it was before its line fast path (parseTextOracle), which
// must agree exactly — edges, line count, error line, message and kind —
// and a straightforward line-by-line reference: the same edges, or an
// error on the same line. Seeds are in testdata/fuzz/FuzzParseText.
func FuzzParseText(f *testing.F) {
	for _, s := range []string{
		"0 1\n2 3\n", "id_1,id_2\n0,1\r\n", "# c\n% d\n\n1\t2\n", "1 , 2\n", "-1 2\n", "1 2 3\n",
		"4294967296 1\n", "99999999999999999999 1\n", "1 2", "\r\n", "a b\n1 2\n", "1,,2\n", "1\r2\n",
	} {
		f.Add([]byte(s), uint32(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint32) {
		lim := uint64(chunkfmt.MaxNodes)
		if limit > 0 {
			lim = uint64(limit)
		}
		got := parseText(data, make([]uint32, len(data)/2+2), lim, limit > 0, true)
		old := parseTextOracle(data, make([]uint32, len(data)/2+2), lim, limit > 0, true)
		if !equalU32(got.pairs, old.pairs) || got.lines != old.lines || got.errLine != old.errLine ||
			got.errMsg != old.errMsg || got.errKind != old.errKind {
			t.Fatalf("%q: scanner %v lines %d error %d %q %v;\noracle %v lines %d error %d %q %v",
				data, got.pairs, got.lines, got.errLine, got.errMsg, got.errKind,
				old.pairs, old.lines, old.errLine, old.errMsg, old.errKind)
		}
		want, wantLine, wantErr := referenceParse(data, lim)
		if (got.errMsg != "") != wantErr {
			t.Fatalf("%q: scanner error %q, reference error %v (line %d)", data, got.errMsg, wantErr, wantLine)
		}
		if wantErr {
			if got.errLine != wantLine {
				t.Fatalf("%q: scanner error on line %d, reference on %d (%s)", data, got.errLine, wantLine, got.errMsg)
			}
			return
		}
		if !equalU32(got.pairs, want) {
			t.Fatalf("%q: scanner %v, reference %v", data, got.pairs, want)
		}
		if got.lines != int64(bytes.Count(data, []byte{'\n'})) {
			t.Fatalf("lines = %d", got.lines)
		}
	})
}

// referenceParse is the slow, obvious reading of the text grammar.
func referenceParse(data []byte, limit uint64) (pairs []uint32, errLine int64, isErr bool) {
	lines := bytes.Split(data, []byte{'\n'})
	for i, l := range lines {
		l = bytes.TrimSuffix(l, []byte{'\r'})
		t := bytes.Trim(l, " \t")
		if len(t) == 0 || t[0] == '#' || t[0] == '%' {
			continue
		}
		// Separator: blanks with at most one comma.
		f := splitFields(t)
		ok := len(f) == 2
		var ids [2]uint64
		for k := 0; ok && k < 2; k++ {
			if !isDigits(f[k]) {
				ok = false
				break
			}
			v, err := strconv.ParseUint(string(f[k]), 10, 64)
			if err != nil {
				v = 1 << 63
			}
			ids[k] = v
		}
		if !ok {
			if i == 0 && hasLetter(l) {
				continue
			}
			return nil, int64(i), true
		}
		if ids[0] >= limit || ids[1] >= limit {
			return nil, int64(i), true
		}
		pairs = append(pairs, uint32(ids[0]), uint32(ids[1]))
	}
	return pairs, 0, false
}

func splitFields(t []byte) [][]byte {
	// Two tokens separated by blanks with at most one comma.
	i := 0
	for i < len(t) && t[i] != ' ' && t[i] != '\t' && t[i] != ',' {
		i++
	}
	if i == len(t) {
		return [][]byte{t}
	}
	j := i
	commas := 0
	for j < len(t) && (t[j] == ' ' || t[j] == '\t' || t[j] == ',') {
		if t[j] == ',' {
			commas++
		}
		j++
	}
	if commas > 1 {
		return nil
	}
	rest := t[j:]
	for k, c := range rest {
		if c == ' ' || c == '\t' || c == ',' {
			return [][]byte{t[:i], rest[:k], nil}
		}
	}
	return [][]byte{t[:i], rest}
}

// TestScanUint checks the SWAR digit scanner against the byte loop for
// every digit count and every kind of byte after the digits, with and
// without 8 bytes of room.
func TestScanUint(t *testing.T) {
	slow := func(b []byte, i int) (uint64, int) {
		var x uint64
		for i < len(b) && b[i]-'0' <= 9 {
			x = x*10 + uint64(b[i]-'0')
			i++
		}
		return x, i
	}
	digits := "98765432109876543210"
	for n := 0; n <= 20; n++ {
		for _, after := range []string{"", "\n", "\t7", " ", ",", "\r\n", "/", ":", "a", "\x00", "\xff", "00000000"} {
			for _, pad := range []string{"", "\n\n\n\n\n\n\n\n"} {
				b := []byte("x" + digits[:n] + after + pad)
				gv, gi := scanUint(b, 1)
				wv, wi := slow(b, 1)
				if gi != wi || (n <= 19 && gv != wv) {
					t.Fatalf("%q: scanUint = %d, %d; want %d, %d", b, gv, gi, wv, wi)
				}
			}
		}
	}
}
