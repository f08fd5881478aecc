package featstore

import (
	"fmt"
	"strings"
)

// DefectError describes one defect of a feature store: the file, the
// block and its byte range, the node concerned, and what is wrong.
// errors.Is(err, ErrCorrupt) is true for it.
type DefectError struct {
	File  string // base name of the file, e.g. "features-1.bin"
	Block int    // block index, -1 when the defect is not in one block
	Off   int64  // first byte of Block (when Block >= 0)
	End   int64  // one past the last byte of Block (when Block >= 0)
	Node  int64  // node concerned, -1 when none
	What  string // what is wrong and what was expected
}

func (e *DefectError) Error() string {
	var b strings.Builder
	b.WriteString("featstore: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Block >= 0 {
		fmt.Fprintf(&b, "block %d (bytes %d..%d): ", e.Block, e.Off, e.End-1)
	}
	if e.Node >= 0 {
		fmt.Fprintf(&b, "node %d: ", e.Node)
	}
	b.WriteString(e.What)
	return b.String()
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *DefectError) Is(target error) bool { return target == ErrCorrupt }

// defect builds a DefectError for block i of f (i < 0: none).
func defect(f *DataFile, i int, node int64, format string, args ...any) *DefectError {
	e := &DefectError{File: f.File, Block: i, Node: node, What: fmt.Sprintf(format, args...)}
	if i >= 0 {
		e.Off, e.End = f.BlockRange(i)
		e.End += e.Off
	}
	return e
}
