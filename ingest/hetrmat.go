package ingest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/heterofmt"
	"github.com/streamsampler/streamsampler/internal/atomicfile"
)

// TypedRelation is one relation of a typed graph to generate: its
// canonical edge type and its number of edges.
type TypedRelation struct {
	Src, Rel, Dst string
	Edges         int64
}

// TypedRMATOptions parameterise the typed R-MAT generator: node types with
// their counts, relations with their edge counts, and R-MAT's quadrant
// probabilities (zero: Graph500's a = .57, b = .19, c = .19).
type TypedRMATOptions struct {
	NodeTypes []heterofmt.NodeType
	Relations []TypedRelation
	Seed      uint64 // the edges are a pure function of the options
	A, B, C   float64
}

// MAG240M's node types and relations (OGB-LSC MAG240M: Hu et al., 2021),
// the proportions of the mag240m-like preset.
var (
	mag240mTypes = []heterofmt.NodeType{{Name: "paper", Count: 121751666}, {Name: "author", Count: 122383112}, {Name: "institution", Count: 25721}}
	mag240mRels  = []TypedRelation{
		{Src: "author", Rel: "writes", Dst: "paper", Edges: 386022720},
		{Src: "author", Rel: "affiliated_with", Dst: "institution", Edges: 44592586},
		{Src: "paper", Rel: "cites", Dst: "paper", Edges: 1297748926},
	}
)

// Presets of the typed generator, by name.
const PresetMAG240M = "mag240m-like"

// Preset returns the node types and relations of a named preset scaled to
// about totalEdges edges over all relations: each relation gets its share
// of MAG240M's edges (the shares rounded so that they add up to
// totalEdges exactly) and each node type its count times the same factor
// (at least 1), so that the average degrees are MAG240M's.
func Preset(name string, totalEdges int64) (TypedRMATOptions, error) {
	if name != PresetMAG240M {
		return TypedRMATOptions{}, fmt.Errorf("typed rmat: preset %q: want %s", name, PresetMAG240M)
	}
	if totalEdges < int64(len(mag240mRels)) {
		return TypedRMATOptions{}, fmt.Errorf("typed rmat: %d edges: want at least %d (one per relation)", totalEdges, len(mag240mRels))
	}
	var all int64
	for _, r := range mag240mRels {
		all += r.Edges
	}
	f := float64(totalEdges) / float64(all)
	o := TypedRMATOptions{}
	for _, t := range mag240mTypes {
		c := math.Round(float64(t.Count) * f)
		if c > chunkfmt.MaxNodes {
			return TypedRMATOptions{}, fmt.Errorf("typed rmat: %d edges give node type %s %.0f nodes, more than the maximum %d", totalEdges, t.Name, c, chunkfmt.MaxNodes)
		}
		o.NodeTypes = append(o.NodeTypes, heterofmt.NodeType{Name: t.Name, Count: uint32(max(1, c))})
	}
	// Largest remainder: floors, then one more edge for the relations
	// with the largest fractional parts.
	left := totalEdges
	frac := make([]float64, len(mag240mRels))
	for i, r := range mag240mRels {
		x := float64(r.Edges) * f
		e := max(1, int64(x))
		frac[i] = x - float64(e)
		o.Relations = append(o.Relations, TypedRelation{Src: r.Src, Rel: r.Rel, Dst: r.Dst, Edges: e})
		left -= e
	}
	for ; left > 0; left-- {
		best := 0
		for i := range frac {
			if frac[i] > frac[best] {
				best = i
			}
		}
		o.Relations[best].Edges++
		frac[best]--
	}
	return o, nil
}

// NumEdges is the total over the relations.
func (o *TypedRMATOptions) NumEdges() int64 {
	var n int64
	for _, r := range o.Relations {
		n += r.Edges
	}
	return n
}

func (o *TypedRMATOptions) normalize() error {
	if o.A == 0 && o.B == 0 && o.C == 0 {
		o.A, o.B, o.C = 0.57, 0.19, 0.19
	}
	if o.A < 0 || o.B < 0 || o.C < 0 || o.A+o.B+o.C > 1 {
		return fmt.Errorf("typed rmat: probabilities a=%g b=%g c=%g: want non-negative with a+b+c ≤ 1", o.A, o.B, o.C)
	}
	for i, r := range o.Relations {
		if r.Edges < 0 {
			return fmt.Errorf("typed rmat: relation %d (%s, %s, %s): %d edges", i, r.Src, r.Rel, r.Dst, r.Edges)
		}
	}
	return nil
}

// typedGen generates the edges of one relation: R-MAT over
// 2^L × 2^L, L = max(ks, kd), keeping the top ks bits of the row id and
// the top kd of the column id (their marginals keep R-MAT's skew), each
// then scrambled by a bijection of its node type's 2^k ids (the same for
// every relation of the type, so that a type's hubs are the same nodes
// in all its relations, as a prolific author is in writes and
// affiliated_with) and scaled onto the type's count, n·x >> k.
type typedGen struct {
	rel           int
	edges         int64
	seed          uint64
	ta, tab, tabc uint64
	l             int
	src, dst      typeScramble
}

// typeScramble maps [0, 2^k) onto [0, n): a seeded bijection, then a
// monotone scaling.
type typeScramble struct {
	n          uint64
	k          int
	mask       uint64
	m1, m2, ad uint64
}

func newTypeScramble(seed uint64, typ int, n uint32) typeScramble {
	k := max(1, bits.Len32(max(n, 1)-1))
	s := rand.New(rand.NewPCG(seed, 0x7e7e0000+uint64(typ)))
	return typeScramble{n: uint64(n), k: k, mask: 1<<k - 1, m1: s.Uint64() | 1, m2: s.Uint64() | 1, ad: s.Uint64()}
}

func (t *typeScramble) apply(x uint64) uint32 {
	h := uint(t.k/2 + 1)
	x = ((x + t.ad) * t.m1) & t.mask
	x ^= x >> h
	x = (x * t.m2) & t.mask
	x ^= x >> h
	return uint32((x * t.n) >> t.k)
}

func newTypedGen(o *TypedRMATOptions, rel int) *typedGen {
	r := o.Relations[rel]
	idx := func(name string) int {
		for i, t := range o.NodeTypes {
			if t.Name == name {
				return i
			}
		}
		return -1
	}
	si, di := idx(r.Src), idx(r.Dst)
	g := &typedGen{rel: rel, edges: r.Edges, seed: o.Seed,
		src: newTypeScramble(o.Seed, si, o.NodeTypes[si].Count), dst: newTypeScramble(o.Seed, di, o.NodeTypes[di].Count)}
	g.ta = uint64(o.A * 65536)
	g.tab = uint64((o.A + o.B) * 65536)
	g.tabc = uint64((o.A + o.B + o.C) * 65536)
	g.l = max(g.src.k, g.dst.k)
	return g
}

// block fills pairs with the edges of block b: (src id, dst id) pairs.
func (g *typedGen) block(b int64, pairs []uint32) []uint32 {
	n := min(int64(rmatBlock), g.edges-b*rmatBlock)
	pairs = pairs[:2*n]
	r := rand.NewPCG(g.seed, uint64(g.rel)<<40|uint64(b))
	for e := range n {
		var u, v, bitsLeft uint64
		left := 0
		for range g.l {
			if left == 0 {
				bitsLeft, left = r.Uint64(), 4
			}
			x := bitsLeft & 0xffff
			bitsLeft >>= 16
			left--
			// As rmatGen.block: branch-free quadrant choice.
			geAB := (g.tab - 1 - x) >> 63
			u = u<<1 | geAB
			v = v<<1 | ((g.ta-1-x)>>63 ^ geAB ^ (g.tabc-1-x)>>63)
		}
		pairs[2*e] = g.src.apply(u >> (g.l - g.src.k))
		pairs[2*e+1] = g.dst.apply(v >> (g.l - g.dst.k))
	}
	return pairs
}

// source returns the relation's edges as a pairSource: blocks generated
// on every core, delivered in block order.
func (g *typedGen) source() pairSource {
	nblocks := (g.edges + rmatBlock - 1) / rmatBlock
	return newBlockSource(nblocks, max(1, runtime.GOMAXPROCS(0)), g.block)
}

// blockSource runs gen over blocks 0..n-1 on workers goroutines and hands
// the blocks out in order; a block's pairs stay valid until the next call
// of Next.
type blockSource struct {
	order chan *blockJob
	free  chan []uint32
	quit  chan struct{}
	wg    sync.WaitGroup
	prev  []uint32
	once  sync.Once
}

type blockJob struct {
	b    int64
	p    []uint32
	done chan struct{}
}

func newBlockSource(n int64, workers int, gen func(b int64, pairs []uint32) []uint32) *blockSource {
	s := &blockSource{order: make(chan *blockJob, 2*workers), free: make(chan []uint32, 3*workers), quit: make(chan struct{})}
	jobs := make(chan *blockJob, 2*workers)
	s.wg.Add(1 + workers)
	go func() {
		defer s.wg.Done()
		defer close(s.order)
		defer close(jobs)
		for b := range n {
			j := &blockJob{b: b, done: make(chan struct{})}
			// To the workers first: a job in order is always generated,
			// so that Close can wait for every job it drains.
			select {
			case jobs <- j:
			case <-s.quit:
				return
			}
			select {
			case s.order <- j:
			case <-s.quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer s.wg.Done()
			for j := range jobs {
				var buf []uint32
				select {
				case buf = <-s.free:
				default:
					buf = make([]uint32, 2*rmatBlock)
				}
				j.p = gen(j.b, buf[:cap(buf)])
				close(j.done)
			}
		}()
	}
	return s
}

// Next returns the next block's pairs, valid until the next call; its
// previous block's buffer goes back to the workers.
func (s *blockSource) Next() ([]uint32, error) {
	if s.prev != nil {
		select {
		case s.free <- s.prev[:0]:
		default:
		}
		s.prev = nil
	}
	j, ok := <-s.order
	if !ok {
		return nil, io.EOF
	}
	<-j.done
	s.prev = j.p
	return j.p, nil
}

// Close stops the workers and waits for them; safe to call twice.
func (s *blockSource) Close() error {
	s.once.Do(func() {
		close(s.quit)
		go func() {
			for j := range s.order {
				<-j.done
			}
		}()
		s.wg.Wait()
	})
	return nil
}

// WriteTypedEdgeLists writes the typed graph o as edge lists instead of a
// graph directory: each relation's (src id, dst id) pairs as little-endian
// uint32 pairs in dir/SRC___REL___DST.bin32, and the node types as
// dir/num-node-dict.csv (OGB's layout: a header of type names, a line of
// counts), each file atomically. What chunkify build --relation reads:
// the input of a build from files, for benchmarks.
func WriteTypedEdgeLists(ctx context.Context, dir string, o TypedRMATOptions) ([]RelationInput, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("typed rmat: %w", err)
	}
	var names, counts []string
	for _, t := range o.NodeTypes {
		names, counts = append(names, t.Name), append(counts, strconv.FormatUint(uint64(t.Count), 10))
	}
	dict := strings.Join(names, ",") + "\n" + strings.Join(counts, ",") + "\n"
	if err := atomicfile.WriteFile(filepath.Join(dir, "num-node-dict.csv"), []byte(dict), 0o644); err != nil {
		return nil, fmt.Errorf("typed rmat: %w", err)
	}
	var rels []RelationInput
	for i, r := range o.Relations {
		path := filepath.Join(dir, heterofmt.Key(r.Src, r.Rel, r.Dst)+".bin32")
		if err := writeRelationFile(ctx, path, newTypedGen(&o, i)); err != nil {
			return nil, err
		}
		rels = append(rels, RelationInput{Src: r.Src, Rel: r.Rel, Dst: r.Dst, Inputs: []string{path}})
	}
	return rels, nil
}

func writeRelationFile(ctx context.Context, path string, g *typedGen) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("typed rmat: %w", err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 4<<20)
	src := g.source()
	defer src.Close()
	buf := make([]byte, 0, 8*rmatBlock)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if _, err := bw.Write(encodePairs(p, FormatBin32, buf[:0])); err != nil {
			return fmt.Errorf("typed rmat: writing %s: %w", path, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("typed rmat: writing %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("typed rmat: %w", err)
	}
	return nil
}
