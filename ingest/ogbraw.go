package ingest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/streamsampler/streamsampler/heterofmt"
)

// OGB's heterogeneous raw layout (ogb.io.read_graph_raw's heterogeneous
// variant, as ogbn-mag ships it):
//
//	raw/num-node-dict.csv.gz                           header: type names; one row: counts
//	raw/triplet-type-list.csv.gz                       optional: "src,rel,dst" per relation, their order
//	raw/relations/SRC___REL___DST/edge.csv.gz          "src,dst" per line, local ids
//	raw/node-feat/TYPE/node-feat.csv.gz                optional: one row of floats per node
//	raw/node-label/TYPE/node-label.csv.gz              optional: one label per node
const (
	ogbNodeDict  = "num-node-dict.csv.gz"
	ogbTriplets  = "triplet-type-list.csv.gz"
	ogbRelations = "relations"
	ogbEdgeFile  = "edge.csv.gz"
)

// OGBHetero reads the layout of an OGB heterogeneous dataset under dir
// (the dataset directory holding raw/, or raw/ itself): the node types
// and counts of num-node-dict.csv.gz, one relation per
// relations/SRC___REL___DST/edge.csv.gz (in the order of
// triplet-type-list.csv.gz where there is one, as OGB's loaders read
// them, else in name order; each listed relation must exist), and the
// node-feat/node-label files of the types that have them. Errors name the
// file and what was expected.
func OGBHetero(dir string) (types []heterofmt.NodeType, rels []RelationInput, feats []NodeFeatures, err error) {
	raw := dir
	if _, err := os.Stat(filepath.Join(dir, "raw", ogbNodeDict)); err == nil {
		raw = filepath.Join(dir, "raw")
	}
	types, err = ReadNodeDict(filepath.Join(raw, ogbNodeDict))
	if err != nil {
		return nil, nil, nil, err
	}
	rdir := filepath.Join(raw, ogbRelations)
	ents, err := os.ReadDir(rdir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ogb raw: %w (want %s/SRC___REL___DST/%s)", err, rdir, ogbEdgeFile)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		src, rel, dst, err := heterofmt.SplitKey(e.Name())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("ogb raw: %s: %w", filepath.Join(rdir, e.Name()), err)
		}
		p := filepath.Join(rdir, e.Name(), ogbEdgeFile)
		if _, err := os.Stat(p); err != nil {
			return nil, nil, nil, fmt.Errorf("ogb raw: relation (%s, %s, %s): %w", src, rel, dst, err)
		}
		rels = append(rels, RelationInput{Src: src, Rel: rel, Dst: dst, Inputs: []string{p}})
	}
	if len(rels) == 0 {
		return nil, nil, nil, fmt.Errorf("ogb raw: %s: no relation directories SRC___REL___DST", rdir)
	}
	if tp := filepath.Join(raw, ogbTriplets); exists(tp) {
		if rels, err = orderByTriplets(tp, rels); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, t := range types {
		f := filepath.Join(raw, "node-feat", t.Name, "node-feat.csv.gz")
		l := filepath.Join(raw, "node-label", t.Name, "node-label.csv.gz")
		hasF, hasL := exists(f), exists(l)
		switch {
		case hasF:
			nf := NodeFeatures{Type: t.Name, Features: f}
			if hasL {
				nf.Labels = l
			}
			feats = append(feats, nf)
		case hasL:
			return nil, nil, nil, fmt.Errorf("ogb raw: node type %s: %s without %s: a feature store holds labels beside features only", t.Name, l, f)
		}
	}
	return types, rels, feats, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ReadNodeDict reads OGB's num-node-dict.csv(.gz): a header line of node
// type names and one line of their counts, in the same order (the order
// the types keep). Errors name the file, the line and the column.
func ReadNodeDict(path string) ([]heterofmt.NodeType, error) {
	s, err := openStream(path, path, nil, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("ogb raw: %w (want a header of node types and a line of their counts)", err)
		}
		return nil, fmt.Errorf("ogb raw: %w", err)
	}
	defer s.Close()
	r := csv.NewReader(s.r)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, &InputError{File: path, Line: 1, Msg: fmt.Sprintf("want a header of node type names: %v", err), Err: ErrSyntax}
	}
	counts, err := r.Read()
	if err != nil {
		return nil, &InputError{File: path, Line: 2, Msg: fmt.Sprintf("want a line of node counts: %v", err), Err: ErrSyntax}
	}
	if len(counts) != len(head) {
		return nil, &InputError{File: path, Line: 2, Msg: fmt.Sprintf("%d counts for %d node types", len(counts), len(head)), Err: ErrSyntax}
	}
	if extra, err := r.Read(); err != io.EOF {
		return nil, &InputError{File: path, Line: 3, Msg: fmt.Sprintf("unexpected line %q: want one line of counts", strings.Join(extra, ",")), Err: ErrSyntax}
	}
	var ts []heterofmt.NodeType
	for i, h := range head {
		h = strings.TrimSpace(h)
		if err := heterofmt.ValidName(h); err != nil {
			return nil, &InputError{File: path, Line: 1, Msg: fmt.Sprintf("column %d: %v", i+1, err), Err: ErrSyntax}
		}
		n, err := parseCount(counts[i])
		if err != nil {
			return nil, &InputError{File: path, Line: 2, Msg: fmt.Sprintf("column %d (%s): %v", i+1, h, err), Err: ErrSyntax}
		}
		ts = append(ts, heterofmt.NodeType{Name: h, Count: n})
	}
	if err := checkTypes(ts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// orderByTriplets orders rels as OGB's triplet-type-list.csv.gz lists
// them (one "src,rel,dst" line each, no header): every listed relation
// must have its directory, and every directory must be listed.
func orderByTriplets(path string, rels []RelationInput) ([]RelationInput, error) {
	s, err := openStream(path, path, nil, false)
	if err != nil {
		return nil, fmt.Errorf("ogb raw: %w", err)
	}
	defer s.Close()
	r := csv.NewReader(s.r)
	r.FieldsPerRecord = 3
	byKey := map[string]RelationInput{}
	for _, ri := range rels {
		byKey[heterofmt.Key(ri.Src, ri.Rel, ri.Dst)] = ri
	}
	var out []RelationInput
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &InputError{File: path, Line: int64(line), Msg: fmt.Sprintf("want src,rel,dst: %v", err), Err: ErrSyntax}
		}
		k := heterofmt.Key(strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1]), strings.TrimSpace(rec[2]))
		ri, ok := byKey[k]
		if !ok {
			return nil, &InputError{File: path, Line: int64(line), Msg: fmt.Sprintf("relation (%s) has no directory relations/%s with an %s", strings.Join(rec, ", "), k, ogbEdgeFile), Err: ErrFormat}
		}
		delete(byKey, k)
		out = append(out, ri)
	}
	for k := range byKey {
		return nil, &InputError{File: path, Line: -1, Record: -1, Msg: fmt.Sprintf("does not list relations/%s", k), Err: ErrFormat}
	}
	return out, nil
}
