package ingest

import (
	"errors"
	"fmt"
)

// Sentinel errors, for callers that branch on the kind of failure. The
// errors returned wrap them and name the file, line or node involved.
var (
	// ErrSyntax: an input line or record is not a pair of node ids.
	ErrSyntax = errors.New("malformed input")
	// ErrIDRange: a node id is negative, not below --num-nodes, or not
	// below chunkfmt.MaxNodes.
	ErrIDRange = errors.New("node id out of range")
	// ErrExists: the output exists and Force was not given.
	ErrExists = errors.New("output already exists")
	// ErrFormat: the input's format is unsupported (npy dtype, shape...).
	ErrFormat = errors.New("unsupported input format")
	// ErrMemoryBudget: the graph would need more working memory than
	// BuildOptions.Memory allows; Build fails before allocating it.
	ErrMemoryBudget = errors.New("over the memory budget")
)

// InputError locates a defect in an input: the file, and the line (text)
// or record (binary) where it was found.
type InputError struct {
	File   string // the input as the user named it
	Line   int64  // 1-based text line, 0 when not a text position
	Record int64  // 0-based edge/record index for binary inputs, -1 when unknown
	Msg    string // what was found and what was expected
	Err    error  // the sentinel (ErrSyntax, ErrIDRange, ErrFormat) or the I/O cause
}

// Error renders file:line: msg, file: edge N: msg, or file: msg.
func (e *InputError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.Record >= 0:
		return fmt.Sprintf("%s: edge %d: %s", e.File, e.Record, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns the sentinel or the I/O cause, for errors.Is.
func (e *InputError) Unwrap() error { return e.Err }

func rangeMsg(id uint64, limit uint64, numNodesGiven bool) string {
	if numNodesGiven {
		return fmt.Sprintf("node id %d is out of range: ids must be below --num-nodes %d", id, limit)
	}
	return fmt.Sprintf("node id %d is out of range: ids must be below %d", id, limit)
}
