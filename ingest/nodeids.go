package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// ReadNodeIDs reads a list of node ids (a training, validation or test
// split): text with one id per line (#/% comments and blank lines allowed,
// an optional header on the first line, as in OGB's split/*.csv(.gz)), or
// a NumPy .npy 1-D integer array (int32, int64, uint32, uint64; shape (N,),
// (N, 1) or (1, N)); gzip or zstd compressed or not. Every id must be below
// numNodes. The ids are returned in file order, duplicates kept.
func ReadNodeIDs(path string, numNodes uint32) ([]uint32, error) {
	s, err := openStream(path, path, nil, false)
	if err != nil {
		if _, ok := err.(*InputError); ok {
			return nil, err
		}
		return nil, fmt.Errorf("open node list: %w", err)
	}
	defer s.Close()
	if head, _ := s.r.Peek(len(magicNPY)); bytes.Equal(head, magicNPY) || formatByName(path) == FormatNPY {
		return readNodeIDsNPY(s.r, path, numNodes)
	}
	return readNodeIDsText(s.r, path, numNodes)
}

func readNodeIDsText(r *bufio.Reader, name string, numNodes uint32) ([]uint32, error) {
	var ids []uint32
	var line int64
	for {
		b, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, &InputError{File: name, Line: line + 1, Msg: "line too long, expected one non-negative integer node id", Err: ErrSyntax}
		}
		if err != nil && err != io.EOF {
			if ie, ok := err.(*InputError); ok {
				return nil, ie
			}
			return nil, &InputError{File: name, Record: -1, Msg: "read error: " + err.Error(), Err: err}
		}
		if len(b) == 0 && err == io.EOF {
			return ids, nil
		}
		line++
		t := bytes.TrimSpace(b)
		if len(t) > 0 && t[0] != '#' && t[0] != '%' {
			// OGB splits are single-column CSVs; tolerate a trailing comma.
			t = bytes.TrimSpace(bytes.TrimSuffix(t, []byte(",")))
			id, perr := strconv.ParseUint(string(t), 10, 64)
			switch {
			case perr != nil && line == 1 && hasLetter(t):
				// a header
			case perr != nil && errors.Is(perr, strconv.ErrRange) && isDigits(t):
				return nil, &InputError{File: name, Line: line, Msg: rangeMsg(1<<64-1, uint64(numNodes), true), Err: ErrIDRange}
			case perr != nil:
				return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("found %q, expected one non-negative integer node id", truncate(string(t))), Err: ErrSyntax}
			case id >= uint64(numNodes):
				return nil, &InputError{File: name, Line: line, Msg: fmt.Sprintf("node id %d is out of range: ids must be below the graph's %d nodes", id, numNodes), Err: ErrIDRange}
			default:
				ids = append(ids, uint32(id))
			}
		}
		if err == io.EOF {
			return ids, nil
		}
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c-'0' > 9 {
			return false
		}
	}
	return len(b) > 0
}

func readNodeIDsNPY(r *bufio.Reader, name string, numNodes uint32) ([]uint32, error) {
	h, err := readNPYHeader(r, name)
	if err != nil {
		return nil, err
	}
	var n int64
	switch {
	case len(h.shape) == 1:
		n = h.shape[0]
	case len(h.shape) == 2 && (h.shape[0] == 1 || h.shape[1] == 1):
		n = h.shape[0] * h.shape[1]
	default:
		return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: shape %v is not a node list: want (N,)", h.shape), Err: ErrFormat}
	}
	if n > chunkfmt.MaxNodes*4 {
		return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: %d ids is implausibly many", n), Err: ErrFormat}
	}
	ids := make([]uint32, 0, n)
	buf := make([]byte, 8)[:h.width]
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("npy: truncated: the header promises %d ids, the data holds %d", n, i), Err: ErrSyntax}
		}
		var x uint64
		if h.width == 4 {
			x = uint64(leU32(buf))
			if h.signed {
				x = uint64(int64(int32(x)))
			}
		} else {
			x = leU64(buf)
		}
		if h.signed && int64(x) < 0 {
			return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("id %d (index %d) is negative, expected non-negative node ids", int64(x), i), Err: ErrIDRange}
		}
		if x >= uint64(numNodes) {
			return nil, &InputError{File: name, Record: -1, Msg: fmt.Sprintf("id %d (index %d) is out of range: ids must be below the graph's %d nodes", x, i, numNodes), Err: ErrIDRange}
		}
		ids = append(ids, uint32(x))
	}
	return ids, nil
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func leU64(b []byte) uint64 { return uint64(leU32(b)) | uint64(leU32(b[4:]))<<32 }
