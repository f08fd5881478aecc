package chunkfmt

import (
	"fmt"
	"strings"
)

// DefectError describes one defect of a graph directory: where it is (the
// file, the chunk and its node range, the node, the word offset inside the
// chunk) and what is wrong. errors.Is(err, ErrCorrupt) is true for it.
type DefectError struct {
	File  string // base name of the file holding the defect, e.g. "edges.chunks"
	Chunk int    // chunk index, -1 when the defect is not in one chunk
	Start uint32 // first node of Chunk (when Chunk >= 0)
	End   uint32 // one past the last node of Chunk (when Chunk >= 0)
	Node  int64  // node concerned, -1 when none
	Word  int64  // word offset inside the chunk, -1 when none
	What  string // what is wrong, in words
}

func (e *DefectError) Error() string {
	var b strings.Builder
	b.WriteString("chunkfmt: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Chunk >= 0 {
		if e.End > e.Start {
			fmt.Fprintf(&b, "chunk %d (nodes %d..%d): ", e.Chunk, e.Start, e.End-1)
		} else {
			fmt.Fprintf(&b, "chunk %d: ", e.Chunk)
		}
	}
	if e.Node >= 0 {
		fmt.Fprintf(&b, "node %d: ", e.Node)
	}
	b.WriteString(e.What)
	return b.String()
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *DefectError) Is(target error) bool { return target == ErrCorrupt }

// defect builds a DefectError for chunk c of m (c < 0: none).
func defect(m *Manifest, file string, c int, node, word int64, format string, args ...any) *DefectError {
	e := &DefectError{File: file, Chunk: c, Node: node, Word: word, What: fmt.Sprintf(format, args...)}
	if m != nil && c >= 0 && c < len(m.Chunks) {
		e.Start, e.End = m.Chunks[c].Start, m.Chunks[c].End
	}
	return e
}
