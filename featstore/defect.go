package featstore

import (
	"fmt"
	"strings"
)

// DefectError describes one defect of a feature store: the file, the
// page, its bytes and the rows they hold, the node concerned, and what is
// wrong. errors.Is(err, ErrCorrupt) is true for it.
type DefectError struct {
	File     string // base name of the file, e.g. "features-1.bin"
	Page     int64  // page index, -1 when the defect is not in one page
	Off      int64  // first byte of Page (when Page >= 0)
	End      int64  // one past the last byte of Page (when Page >= 0)
	FirstRow int64  // first row (node) with a byte in Page, -1 when unknown
	LastRow  int64  // last row (node) with a byte in Page, -1 when unknown
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
	if e.Page >= 0 {
		fmt.Fprintf(&b, "page %d (bytes %d..%d", e.Page, e.Off, e.End-1)
		if e.FirstRow >= 0 {
			fmt.Fprintf(&b, ", rows %d..%d", e.FirstRow, e.LastRow)
		}
		b.WriteString("): ")
	}
	if e.Node >= 0 {
		fmt.Fprintf(&b, "node %d: ", e.Node)
	}
	b.WriteString(e.What)
	return b.String()
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *DefectError) Is(target error) bool { return target == ErrCorrupt }

// defect builds a DefectError for page i of f (i < 0: none), whose rows
// are unit bytes each (0: rows unknown).
func defect(f *DataFile, i, unit, node int64, format string, args ...any) *DefectError {
	e := &DefectError{File: f.File, Page: i, FirstRow: -1, LastRow: -1, Node: node, What: fmt.Sprintf(format, args...)}
	if i >= 0 {
		off, n := f.PageRange(i)
		e.Off, e.End = off, off+n
		if unit > 0 {
			e.FirstRow, e.LastRow = e.Off/unit, (e.End-1)/unit
		}
	}
	return e
}
