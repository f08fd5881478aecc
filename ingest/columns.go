package ingest

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/streamsampler/streamsampler/internal/progress"
)

// ColumnBounds bounds the two columns of an edge list separately: the
// edges of a relation (src type, rel, dst type) of a heterogeneous graph,
// whose first column holds local ids of the src type and second of the
// dst type (docs/FORMAT.md, "Heterogeneous graph directories").
type ColumnBounds struct {
	Src, Dst         uint32 // ids of column 0 must be below Src, of column 1 below Dst
	SrcName, DstName string // the node types, for errors
}

// check checks the pairs p of input in, whose earlier edges were counted
// in in.edges; the error names the file, the line (text) or edge, the id
// and its node type's count.
func (c *ColumnBounds) check(p []uint32, in *input) error {
	for k := 0; k+1 < len(p); k += 2 {
		col, id, lim, typ := 0, p[k], c.Src, c.SrcName
		if id < lim {
			if p[k+1] < c.Dst {
				continue
			}
			col, id, lim, typ = 1, p[k+1], c.Dst, c.DstName
		}
		what := [2]string{"src", "dst"}[col]
		rec := int64(in.edges) + int64(k/2)
		e := &InputError{File: in.name, Record: rec, Err: ErrIDRange,
			Msg: fmt.Sprintf("%s id %d (column %d) is out of range: node type %s has %d nodes, ids 0..%d", what, id, col+1, typ, lim, int64(lim)-1)}
		if lim == 0 {
			e.Msg = fmt.Sprintf("%s id %d (column %d): node type %s has no nodes", what, id, col+1, typ)
		}
		if in.format == FormatText && in.gen == nil {
			if line := textLineOf(in.path, in.name, rec); line > 0 {
				e.Line = line
			}
		}
		return e
	}
	return nil
}

// textLineOf returns the 1-based line of the rec-th edge (0-based) of the
// text input at path, or 0 when it cannot tell. It runs on the error path
// only: it reads the input again, counting the lines that hold an edge as
// parseText does (blank lines, # and % comments and a first line with a
// letter, a CSV header, hold none). Every line before the edge parsed in
// pass 1, so each of the others holds exactly one.
func textLineOf(path, name string, rec int64) int64 {
	s, err := openStream(path, name, nil, false)
	if err != nil {
		return 0
	}
	defer s.Close()
	sc := bufio.NewScanner(s.r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var line, edges int64
	for sc.Scan() {
		line++
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 || t[0] == '#' || t[0] == '%' {
			continue
		}
		if line == 1 && hasLetter(t) {
			continue
		}
		if edges == rec {
			return line
		}
		edges++
	}
	return 0
}

// generated is an input made in memory, not read from a file: a
// generator, read once by pass 1, which spools its pairs for pass 2.
type generated struct {
	name  string
	edges int64
	open  func() pairSource
}

// countedSource adds 8 bytes per edge of src to bar, as a file's reader
// counts its bytes.
type countedSource struct {
	src pairSource
	bar *progress.Bar
}

func (c *countedSource) Next() ([]uint32, error) {
	p, err := c.src.Next()
	if c.bar != nil {
		c.bar.Add(int64(4 * len(p)))
	}
	return p, err
}

func (c *countedSource) Close() error { return c.src.Close() }
