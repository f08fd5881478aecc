package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
)

// textBlockSize is the unit of parallel text parsing: the reader cuts the
// stream into blocks of whole lines about this large.
const textBlockSize = 1 << 20

// textResult is what parsing one block yields.
type textResult struct {
	pairs   []uint32 // interleaved src, dst
	lines   int64    // newlines in the block
	errLine int64    // 0-based line within the block of the first defect
	errMsg  string   // "" when the block parsed
	errKind error
}

// parseText parses the complete lines of b into pairs (whose capacity must
// be at least len(b)/2+2, the most a block can yield: "0 0\n" is 4 bytes).
// ids must be below limit. When header is set, a first line that is not
// an edge but holds a letter is skipped as a CSV header.
//
// It is a hand-written byte scanner: no tokenising into strings, no
// strconv, one pass, no allocation. Each line first gets a fast path for
// the shape nearly every line of a SNAP or OGB file has — digits, one
// blank or comma, digits, LF or CRLF — which reads 8 bytes at a time and
// has no branch that depends on the digits (see parseFast); any other line
// (comments, blanks, headers, defects, a block's last few bytes) goes
// through the general scanner below it, which alone decides what an
// error says.
func parseText(b []byte, pairs []uint32, limit uint64, numGiven, header bool) (res textResult) {
	pairs = pairs[:cap(pairs)]
	np := 0
	var line, lf int64
	var start, start2 int
	var u, v uint64
	var sep, comma bool
	i, n := 0, len(b)
	for i < n {
		// The fast path needs fastRoom bytes after the line start for
		// its 8-byte loads; the last few lines of a block take the
		// general path.
		var fast int64
		i, np, fast = parseFast(b, i, pairs, np, limit)
		line += fast
		if i+fastRoom <= n {
			// Perhaps a line with a long id.
			i, np, fast = parseFastWide(b, i, pairs, np, limit)
			line += fast
		}
		if i == n {
			break
		}
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
				if i+1 == n {
					i++
					continue
				}
				if b[i+1] == '\n' {
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
		u, i = scanUint(b, i)
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
		v, i = scanUint(b, i)
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
		lf = 0
		if i < n {
			if b[i] != '\n' {
				if header && line == 0 && hasLetter(lineAt(b, start)) {
					goto skipHeader
				}
				return syntaxErr(b, i, line, pairs[:np])
			}
			i++
			lf = 1
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
		line += lf
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
	// Every path above counts a line exactly when it consumes its LF.
	res.pairs = pairs[:np]
	res.lines = line
	return res
}

// fastRoom is the room parseFastWide needs after a line start: two ids of
// up to 15 digits with their 8-byte loads, a separator, CR and LF.
const fastRoom = 40

// parseFast parses lines from b[i:] into pairs[np:] for as long as they
// have the common shape — two ids of 1 to 7 digits below limit, one
// blank, tab or comma between them, LF or CRLF after — and fastRoom bytes
// of b remain. It returns where it stopped (a line start), the new pair
// count and how many lines it read. Every other line is the general
// scanner's, which alone decides what an error says.
//
// The loop is written out by hand (the helpers it would call are too
// large for the inliner): per line, two 8-byte loads, a borrow-safe
// digit mask, a trailing-zero count for the digit run's length and three
// multiplications per id, and no branch whose outcome depends on the
// digits themselves — every branch below is taken the same way on nearly
// every line of a well-formed file.
func parseFast(b []byte, i int, pairs []uint32, np int, limit uint64) (int, int, int64) {
	start := np
	for i+fastRoom <= len(b) && np+2 <= len(pairs) {
		w := b[i : i+fastRoom]
		t, j := digitRun(binary.LittleEndian.Uint64(w))
		if uint(j-1) >= 7 {
			break
		}
		u := digitsValue(t, j)
		// A blank, a tab or a comma, and then digits.
		if c := w[j]; c >= 64 || sepMask>>c&1 == 0 {
			break
		}
		k := j + 1
		t, j = digitRun(binary.LittleEndian.Uint64(w[k:]))
		if uint(j-1) >= 7 {
			break
		}
		v := digitsValue(t, j)
		k += j
		if max(u, v) >= limit {
			break
		}
		switch {
		case w[k] == '\n':
			i += k + 1
		case w[k] == '\r' && w[k+1] == '\n':
			i += k + 2
		default:
			return i, np, int64(np-start) / 2
		}
		pairs[np] = uint32(u)
		pairs[np+1] = uint32(v)
		np += 2
	}
	return i, np, int64(np-start) / 2
}

// parseFastWide is parseFast for lines whose ids may have 8 to 15
// digits (ogbn-papers100M's have 9): each id that fills its first 8-byte
// word takes a second. It is a loop of its own, which parseText enters
// only where parseFast stops, because the extra case costs the narrow
// loop registers it needs: the x86 version of parseFast spills less and
// runs ≈ 20% faster without it.
func parseFastWide(b []byte, i int, pairs []uint32, np int, limit uint64) (int, int, int64) {
	start := np
	for i+fastRoom <= len(b) && np+2 <= len(pairs) {
		w := b[i : i+fastRoom]
		t, j := digitRun(binary.LittleEndian.Uint64(w))
		var u uint64
		if uint(j-1) < 7 {
			u = digitsValue(t, j)
		} else {
			// 0 digits, or 8 and perhaps more: a second word.
			t2, j2 := digitRun(binary.LittleEndian.Uint64(w[8:]))
			if j == 0 || j2 == 8 {
				break
			}
			u = digitsValue(t, 8)*pow10[j2] + digitsValue(t2, j2)
			j = 8 + j2
		}
		// A blank, a tab or a comma, and then digits.
		if c := w[j]; c >= 64 || sepMask>>c&1 == 0 {
			break
		}
		k := j + 1
		t, j = digitRun(binary.LittleEndian.Uint64(w[k:]))
		var v uint64
		if uint(j-1) < 7 {
			v = digitsValue(t, j)
		} else {
			t2, j2 := digitRun(binary.LittleEndian.Uint64(w[k+8:]))
			if j == 0 || j2 == 8 {
				break
			}
			v = digitsValue(t, 8)*pow10[j2] + digitsValue(t2, j2)
			j = 8 + j2
		}
		k += j
		if max(u, v) >= limit {
			break
		}
		switch {
		case w[k] == '\n':
			i += k + 1
		case w[k] == '\r' && w[k+1] == '\n':
			i += k + 2
		default:
			return i, np, int64(np-start) / 2
		}
		pairs[np] = uint32(u)
		pairs[np+1] = uint32(v)
		np += 2
	}
	return i, np, int64(np-start) / 2
}

// sepMask has the bits of the bytes that may separate two ids on the fast
// path: blank, tab and comma (all below 64).
const sepMask = 1<<' ' | 1<<'\t' | 1<<','

// pow10[n] is 10^n, for the ids of 9 to 15 digits.
var pow10 = [8]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000}

// digitRun takes 8 bytes loaded little-endian (the first byte lowest) and
// returns them less '0' in every byte, and how many of them, from the
// first, are digits (8 when all are). A byte is a digit iff it is ≤ 9
// after the subtraction; borrows and carries run only towards later
// bytes, so the first non-digit is flagged correctly whatever follows.
func digitRun(w uint64) (t uint64, n int) {
	t = w - 0x3030303030303030
	m := (t | (t + 0x7676767676767676)) & 0x8080808080808080
	return t, bits.TrailingZeros64(m) >> 3
}

// digitsValue combines the first n (0 to 8) digit bytes of t, as
// digitRun returns them, into their value with three multiplications.
func digitsValue(t uint64, n int) uint64 {
	// The n digits to the top, zeros (leading zeros) below.
	t <<= 64 - 8*uint(n)
	t = (t * 10) + (t >> 8)
	t = ((t & 0x00FF00FF00FF00FF) * (100<<16 + 1)) >> 16
	t = ((t & 0x0000FFFF0000FFFF) * (10000<<32 + 1)) >> 32
	return t & 0xFFFFFFFF
}

// scanUint reads the decimal digits at b[i:] (possibly none) and returns
// their value (wrapped if longer than 19 digits; callers check the digit
// count) and the index after them. Where 8 bytes are available it works
// on them at once (SWAR): find the first non-digit with a borrow-safe
// mask, then combine up to 8 digits with three multiplications; runs of
// 8 to 15 digits take two words where 16 bytes are available.
func scanUint(b []byte, i int) (uint64, int) {
	if i+8 <= len(b) {
		t, n := digitRun(binary.LittleEndian.Uint64(b[i:]))
		if n < 8 {
			return digitsValue(t, n), i + n
		}
		// 9 to 15 digits (ogbn-papers100M's ids have 9) take a second word.
		if i+16 <= len(b) {
			if t2, n2 := digitRun(binary.LittleEndian.Uint64(b[i+8:])); n2 < 8 {
				return digitsValue(t, 8)*pow10[n2] + digitsValue(t2, n2), i + 8 + n2
			}
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

// longID re-reads an id of many digits, which may have overflowed: leading
// zeros are fine, more than 18 significant digits are out of any range.
func longID(d []byte) uint64 {
	for len(d) > 1 && d[0] == '0' {
		d = d[1:]
	}
	if len(d) > 18 {
		return 1 << 63
	}
	var x uint64
	for _, c := range d {
		x = x*10 + uint64(c-'0')
	}
	return x
}

func hasLetter(s []byte) bool {
	for _, c := range s {
		if c|0x20 >= 'a' && c|0x20 <= 'z' || c == '_' {
			return true
		}
	}
	return false
}

// lineAt returns the line of b that holds position i, without its end.
func lineAt(b []byte, i int) []byte {
	s := bytes.LastIndexByte(b[:i], '\n') + 1
	e := bytes.IndexByte(b[i:], '\n')
	if e < 0 {
		e = len(b)
	} else {
		e += i
	}
	return bytes.TrimRight(b[s:e], "\r")
}

func isSep(c byte) bool { return c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\n' }

// tokenAt returns the whitespace/comma-delimited token at position i.
func tokenAt(b []byte, i int) string {
	s := i
	for s > 0 && !isSep(b[s-1]) {
		s--
	}
	e := i
	for e < len(b) && !isSep(b[e]) {
		e++
	}
	return truncate(string(b[s:e]))
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func syntaxErr(b []byte, i int, line int64, pairs []uint32) textResult {
	found := ""
	if i < len(b) && !isSep(b[i]) {
		found = strconv.Quote(tokenAt(b, i))
	} else if l := lineAt(b, min(i, len(b))); len(l) > 0 {
		found = "end of line in " + strconv.Quote(truncate(string(l)))
	} else {
		found = "end of line"
	}
	return textResult{
		pairs:   pairs,
		errLine: line,
		errKind: ErrSyntax,
		errMsg:  fmt.Sprintf("found %s, expected two non-negative integer node ids", found),
	}
}

// textJob is one block on its way through the parse pipeline.
type textJob struct {
	data  []byte
	pairs []uint32
	first bool
	res   textResult
	rdErr error // a read error (or an over-long line) after this block
	long  bool  // the block had no newline: a line longer than a block
	done  chan struct{}
}

// textSource parses a text stream in parallel: a reader goroutine cuts it
// into blocks of whole lines, workers parse blocks, and Next hands the
// results back in input order, so errors name the first bad line.
type textSource struct {
	name     string
	limit    uint64
	numGiven bool
	block    int // bytes per block
	order    chan *textJob
	free     chan *textJob
	quit     chan struct{}
	wg       sync.WaitGroup
	prev     *textJob
	line     int64 // lines before the next block
	err      error
	closed   bool
}

func newTextSource(r io.Reader, name string, limit uint64, numGiven bool) *textSource {
	return newTextSourceSize(r, name, limit, numGiven, textBlockSize)
}

// newTextSourceSize is newTextSource with blocks of block bytes, which
// tests make small to cross many block boundaries.
func newTextSourceSize(r io.Reader, name string, limit uint64, numGiven bool, block int) *textSource {
	workers := max(1, runtime.GOMAXPROCS(0))
	k := 2*workers + 2
	s := &textSource{
		name: name, limit: limit, numGiven: numGiven, block: block,
		order: make(chan *textJob, k), free: make(chan *textJob, k), quit: make(chan struct{}),
	}
	for range k {
		s.free <- &textJob{data: make([]byte, block), pairs: make([]uint32, block/2+2)}
	}
	jobs := make(chan *textJob, k)
	s.wg.Add(1 + workers)
	go s.readLoop(r, jobs)
	for range workers {
		go func() {
			defer s.wg.Done()
			for j := range jobs {
				if !j.long {
					j.res = parseText(j.data, j.pairs, limit, numGiven, j.first)
				}
				close(j.done)
			}
		}()
	}
	return s
}

func (s *textSource) readLoop(r io.Reader, jobs chan<- *textJob) {
	defer s.wg.Done()
	defer close(jobs)
	defer close(s.order)
	var carry []byte
	first := true
	for {
		var j *textJob
		select {
		case j = <-s.free:
		case <-s.quit:
			return
		}
		buf := j.data[:cap(j.data)]
		m := copy(buf, carry)
		n, err := io.ReadFull(r, buf[m:])
		total := m + n
		j.first, first = first, false
		j.rdErr, j.long = nil, false
		j.done = make(chan struct{})
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			j.rdErr = err
			total = 0
		}
		if j.rdErr == nil && !eof {
			cut := bytes.LastIndexByte(buf[:total], '\n')
			if cut < 0 {
				j.long = true
			} else {
				carry = append(carry[:0], buf[cut+1:total]...)
				total = cut + 1
			}
		}
		j.data = buf[:total]
		s.order <- j // never blocks: order has room for every job
		jobs <- j
		if eof || j.rdErr != nil || j.long {
			return
		}
	}
}

// Next returns the next batch of interleaved (src, dst) pairs, valid until
// the following call, or io.EOF after the last.
func (s *textSource) Next() ([]uint32, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.prev != nil {
		s.free <- s.prev
		s.prev = nil
	}
	j, ok := <-s.order
	if !ok {
		s.err = io.EOF
		return nil, io.EOF
	}
	<-j.done
	switch {
	case j.long:
		s.err = &InputError{File: s.name, Line: s.line + 1, Msg: fmt.Sprintf("line longer than %d bytes, expected two non-negative integer node ids", s.block), Err: ErrSyntax}
	case j.res.errMsg != "":
		s.err = &InputError{File: s.name, Line: s.line + j.res.errLine + 1, Msg: j.res.errMsg, Err: j.res.errKind}
	case j.rdErr != nil:
		s.err = j.rdErr
		if _, ok := j.rdErr.(*InputError); !ok {
			s.err = &InputError{File: s.name, Record: -1, Msg: "read error: " + j.rdErr.Error(), Err: j.rdErr}
		}
	}
	if s.err != nil {
		s.free <- j
		return nil, s.err
	}
	s.line += j.res.lines
	s.prev = j
	return j.res.pairs, nil
}

// Close stops the pipeline and waits for its goroutines.
func (s *textSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.quit)
	s.wg.Wait()
	return nil
}
