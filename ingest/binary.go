package ingest

import (
	"encoding/binary"
	"fmt"
	"io"
)

// binSource decodes little-endian integer pairs: interleaved (bin32,
// bin64, npy (E, 2) C order) from a, or split (npy (2, E) C order) with
// sources from a and destinations from b.
type binSource struct {
	name     string
	a, b     io.Reader
	width    int
	signed   bool
	limit    uint64
	numGiven bool
	count    int64 // edges expected, -1 when the stream's end decides
	rec      int64 // edges decoded so far
	bufA     []byte
	bufB     []byte
	pairs    []uint32
	err      error
}

const binBatch = readBufSize / 16 // edges per batch

func newBinSource(name string, a, b io.Reader, width int, signed bool, count int64, limit uint64, numGiven bool) *binSource {
	s := &binSource{name: name, a: a, b: b, width: width, signed: signed, count: count, limit: limit, numGiven: numGiven,
		pairs: make([]uint32, 2*binBatch)}
	if b == nil {
		s.bufA = make([]byte, binBatch*2*width)
	} else {
		s.bufA = make([]byte, binBatch*width)
		s.bufB = make([]byte, binBatch*width)
	}
	return s
}

func (s *binSource) fail(rec int64, msg string, kind error) error {
	s.err = &InputError{File: s.name, Record: rec, Msg: msg, Err: kind}
	return s.err
}

// Next returns the next batch of interleaved pairs, valid until the next
// call, or io.EOF.
func (s *binSource) Next() ([]uint32, error) {
	if s.err != nil {
		return nil, s.err
	}
	want := int64(binBatch)
	if s.count >= 0 {
		want = min(want, s.count-s.rec)
		if want == 0 {
			s.err = io.EOF
			return nil, io.EOF
		}
	}
	var n int64
	if s.b == nil {
		buf := s.bufA[:want*int64(2*s.width)]
		m, err := io.ReadFull(s.a, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, s.readErr(err)
		}
		if m%(2*s.width) != 0 || (s.count >= 0 && m != len(buf)) {
			return nil, s.truncated(int64(m) / int64(2*s.width))
		}
		n = int64(m / (2 * s.width))
		if n == 0 {
			s.err = io.EOF
			return nil, io.EOF
		}
		if err := s.decode(s.pairs[:2*n], buf[:m], 0, 1); err != nil {
			return nil, err
		}
	} else {
		ba, bb := s.bufA[:want*int64(s.width)], s.bufB[:want*int64(s.width)]
		ma, err := io.ReadFull(s.a, ba)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, s.readErr(err)
		}
		mb, err := io.ReadFull(s.b, bb)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, s.readErr(err)
		}
		if ma != len(ba) || mb != len(bb) {
			return nil, s.truncated(int64(min(ma, mb)) / int64(s.width))
		}
		n = want
		if err := s.decode(s.pairs[:2*n], ba, 0, 2); err != nil {
			return nil, err
		}
		if err := s.decode(s.pairs[:2*n], bb, 1, 2); err != nil {
			return nil, err
		}
	}
	s.rec += n
	return s.pairs[:2*n], nil
}

// decode converts the integers in buf into out[first], out[first+stride], …
// checking each against the id limit.
func (s *binSource) decode(out []uint32, buf []byte, first, stride int) error {
	lim := s.limit
	k := first
	switch {
	case s.width == 4 && !s.signed:
		for i := 0; i+4 <= len(buf); i += 4 {
			x := uint64(binary.LittleEndian.Uint32(buf[i:]))
			if x >= lim {
				return s.badID(k, stride, x)
			}
			out[k] = uint32(x)
			k += stride
		}
	case s.width == 4:
		for i := 0; i+4 <= len(buf); i += 4 {
			x := uint64(int64(int32(binary.LittleEndian.Uint32(buf[i:]))))
			if x >= lim {
				return s.badID(k, stride, x)
			}
			out[k] = uint32(x)
			k += stride
		}
	default:
		for i := 0; i+8 <= len(buf); i += 8 {
			x := binary.LittleEndian.Uint64(buf[i:])
			if x >= lim {
				return s.badID(k, stride, x)
			}
			out[k] = uint32(x)
			k += stride
		}
	}
	return nil
}

func (s *binSource) badID(k, stride int, x uint64) error {
	rec := s.rec + int64(k/2)
	if stride == 1 {
		rec = s.rec + int64(k/2)
	}
	if s.signed && int64(x) < 0 {
		return s.fail(rec, fmt.Sprintf("negative node id %d, expected non-negative integer node ids", int64(x)), ErrIDRange)
	}
	return s.fail(rec, rangeMsg(x, s.limit, s.numGiven), ErrIDRange)
}

func (s *binSource) truncated(complete int64) error {
	if s.count >= 0 {
		return s.fail(-1, fmt.Sprintf("truncated: the header promises %d edges, the data holds %d", s.count, s.rec+complete), ErrSyntax)
	}
	return s.fail(-1, fmt.Sprintf("truncated: %d complete edges, then a partial record (file size is not a multiple of %d bytes)", s.rec+complete, 2*s.width), ErrSyntax)
}

func (s *binSource) readErr(err error) error {
	if ie, ok := err.(*InputError); ok {
		s.err = ie
		return ie
	}
	return s.fail(-1, "read error: "+err.Error(), err)
}

func (s *binSource) Close() error { return nil }
