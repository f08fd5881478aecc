package featstore

import (
	"fmt"
	"strings"
)

// DefectError describes one defect of a feature store: the file, the span
// of bytes that failed its check and the rows (nodes) it holds, the node
// concerned, and what is wrong. errors.Is(err, ErrCorrupt) is true for it.
type DefectError struct {
	File     string // base name of the file, e.g. "features-1.bin"
	Span     int64  // index of the checked span (a row of the features, a page of the labels), -1 when none
	Off      int64  // first byte of Span (when Span >= 0)
	End      int64  // one past the last byte of Span (when Span >= 0)
	FirstRow int64  // first row (node) with a byte in Span, -1 when unknown
	LastRow  int64  // last row (node) with a byte in Span, -1 when unknown
	Node     int64  // node concerned, -1 when none
	What     string // what is wrong and what was expected
}

func (e *DefectError) Error() string {
	var b strings.Builder
	b.WriteString("featstore: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	switch {
	case e.Span >= 0 && e.FirstRow >= 0 && e.FirstRow == e.LastRow:
		fmt.Fprintf(&b, "row %d (bytes %d..%d): ", e.FirstRow, e.Off, e.End-1)
	case e.Span >= 0 && e.FirstRow >= 0:
		fmt.Fprintf(&b, "rows %d..%d (bytes %d..%d): ", e.FirstRow, e.LastRow, e.Off, e.End-1)
	case e.Span >= 0:
		fmt.Fprintf(&b, "bytes %d..%d: ", e.Off, e.End-1)
	}
	if e.Node >= 0 {
		fmt.Fprintf(&b, "node %d: ", e.Node)
	}
	b.WriteString(e.What)
	return b.String()
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *DefectError) Is(target error) bool { return target == ErrCorrupt }

// defect builds a DefectError for span i of f (i < 0: none), whose rows
// are unit bytes each (0: rows unknown).
func defect(f *DataFile, i, unit, node int64, format string, args ...any) *DefectError {
	e := &DefectError{File: f.File, Span: i, FirstRow: -1, LastRow: -1, Node: node, What: fmt.Sprintf(format, args...)}
	if i >= 0 {
		off, n := f.SpanRange(i)
		e.Off, e.End = off, off+n
		if unit > 0 {
			e.FirstRow, e.LastRow = e.Off/unit, (e.End-1)/unit
		}
	}
	return e
}
