// Package epochtest holds what the tests of the epoch, epochdir, statedir
// and pipeline packages share: small random graphs and the epochs sampled
// from them by rng.Sample directly, and the brute-force renderings of
// DESIGN §5's assembly (DGL blocks and PyG's hop order) that assembly is
// checked against. It is for tests only.
package epochtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/rng"
)

// Graph is a small in-memory graph for tests.
type Graph struct {
	Off []int
	Adj []uint32
}

func (g *Graph) Neighbors(v uint32) []uint32 { return g.Adj[g.Off[v]:g.Off[v+1]] }

// RandomGraph draws a graph with n nodes and degrees in [0, maxDeg]; with
// dups, neighbor lists may repeat a node (multigraph), which exercises
// duplicate samples in a row.
func RandomGraph(r *rand.Rand, n, maxDeg int, dups bool) *Graph {
	g := &Graph{Off: make([]int, n+1)}
	for v := 0; v < n; v++ {
		d := r.IntN(maxDeg + 1)
		if r.IntN(10) == 0 {
			d = 0
		}
		nb := make([]uint32, d)
		for i := range nb {
			nb[i] = uint32(r.IntN(n))
		}
		slices.Sort(nb)
		if !dups {
			nb = slices.Compact(nb)
		}
		g.Adj = append(g.Adj, nb...)
		g.Off[v+1] = len(g.Adj)
	}
	return g
}

// SampleEpoch is the test's own epoch sampler: rng.Sample per frontier node,
// then epoch.NextFrontier.
func SampleEpoch(g *Graph, seeds []uint32, fanouts []int, key epoch.Key) *epoch.Result {
	f := slices.Clone(seeds)
	slices.Sort(f)
	f = slices.Compact(f)
	res := &epoch.Result{Key: key}
	for l, k := range fanouts {
		if k == epoch.AllNeighbors {
			// A full layer: every neighbor, row after row (rng.AppendAll).
			ly := epoch.Layer{Frontier: f, Fanout: k, Samples: []int32{}, Offsets: []int64{0}}
			for _, v := range f {
				ly.Samples = rng.AppendAll(ly.Samples, g.Neighbors(v))
				ly.Offsets = append(ly.Offsets, int64(len(ly.Samples)))
			}
			res.Layers = append(res.Layers, ly)
			f = epoch.NextFrontier(f, ly.Samples)
			continue
		}
		s := make([]int32, len(f)*k)
		for i, v := range f {
			rng.Sample(s[i*k:(i+1)*k], g.Neighbors(v), v, key.Layer(l), key.Replace)
		}
		res.Layers = append(res.Layers, epoch.Layer{Frontier: f, Fanout: k, Samples: s})
		f = epoch.NextFrontier(f, s)
	}
	res.Final = f
	return res
}

// RandomSeeds picks m distinct nodes of [0, n).
func RandomSeeds(r *rand.Rand, n, m int) []uint32 {
	p := r.Perm(n)[:m]
	out := make([]uint32, m)
	for i, v := range p {
		out[i] = uint32(v)
	}
	return out
}

// NewResult is a random epoch of the given fanouts on a random graph of n
// nodes, its key derived from seed.
func NewResult(t testing.TB, seed uint64, n int, fanouts []int) *epoch.Result {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 77))
	g := RandomGraph(r, n, 10, false)
	return SampleEpoch(g, RandomSeeds(r, n, n/4+1), fanouts, epoch.Key{Seed: seed, Epoch: uint32(seed) + 1, Replace: seed%2 == 0})
}

// EqualResult compares Results by content (nil and empty slices alike).
func EqualResult(a, b *epoch.Result) bool {
	if a.Key != b.Key || len(a.Layers) != len(b.Layers) || !slices.Equal(a.Final, b.Final) {
		return false
	}
	for l := range a.Layers {
		x, y := &a.Layers[l], &b.Layers[l]
		if x.Fanout != y.Fanout || !slices.Equal(x.Frontier, y.Frontier) || !slices.Equal(x.Samples, y.Samples) || !slices.Equal(x.Offsets, y.Offsets) || (x.Offsets == nil) != (y.Offsets == nil) {
			return false
		}
		if (x.EdgeIDs == nil) != (y.EdgeIDs == nil) || !slices.Equal(x.EdgeIDs, y.EdgeIDs) {
			return false
		}
	}
	return true
}

// WithEdgeIDs gives every layer of r edge ids: a distinct id per filled
// slot (its layer and position), -1 at the empty ones.
func WithEdgeIDs(r *epoch.Result) *epoch.Result {
	for l := range r.Layers {
		ly := &r.Layers[l]
		ly.EdgeIDs = make([]int64, len(ly.Samples))
		for i, s := range ly.Samples {
			ly.EdgeIDs[i] = -1
			if s >= 0 {
				ly.EdgeIDs[i] = int64(l)<<32 | int64(i)
			}
		}
	}
	return r
}

// Pick returns m distinct elements of from, drawn by r.
func Pick(r *rand.Rand, from []uint32, m int) []uint32 {
	p := r.Perm(len(from))[:m]
	out := make([]uint32, m)
	for i, j := range p {
		out[i] = from[j]
	}
	return out
}

// BruteBlocks is an independent, quadratic rendering of DESIGN §5.
func BruteBlocks(r *epoch.Result, seeds []uint32) *epoch.Blocks {
	b := &epoch.Blocks{Epoch: r.Key.Epoch, Seeds: slices.Clone(seeds)}
	dst := slices.Clone(seeds)
	for h, ly := range r.Layers {
		_ = h
		src := slices.Clone(dst)
		var es, ed []int32
		for i, v := range dst {
			row := slices.Index(ly.Frontier, v)
			if row < 0 {
				panic(fmt.Sprintf("brute: node %d not in frontier %d", v, h))
			}
			for _, s := range ly.Row(row) {
				if s < 0 {
					continue
				}
				j := slices.Index(src, uint32(s))
				if j < 0 {
					j = len(src)
					src = append(src, uint32(s))
				}
				es = append(es, int32(j))
				ed = append(ed, int32(i))
			}
		}
		b.Hops = append(b.Hops, epoch.Hop{Dst: dst, Src: src, EdgeSrc: es, EdgeDst: ed, EdgeIDs: BruteEdgeIDs(ly, dst)})
		dst = slices.Clone(src)
	}
	return b
}

// BruteEdgeIDs lists the edge ids of nodes' valid samples in row and slot
// order, or nil for a layer without edge ids.
func BruteEdgeIDs(ly epoch.Layer, nodes []uint32) []int64 {
	if ly.EdgeIDs == nil {
		return nil
	}
	out := []int64{}
	for _, v := range nodes {
		row := slices.Index(ly.Frontier, v)
		lo, hi := ly.Span(row)
		for j := lo; j < hi; j++ {
			if ly.Samples[j] >= 0 {
				out = append(out, ly.EdgeIDs[j])
			}
		}
	}
	return out
}

// BrutePyG is an independent rendering of PyG's NeighborLoader semantics,
// written from issue 13's statement and nothing else: n_id starts with the
// seeds in request order; for h = 0 … L−1, for each node first reached at
// hop h (the seeds for h = 0) in n_id order, for each of its layer-h
// samples in slot order (skipping −1): if the sampled node is new, append
// it to n_id; emit the edge (local id of the sampled node → local id of
// the node being expanded). It returns n_id, each hop's edges as
// (src, dst) n_id positions, and each hop's edge ids (nil without).
func BrutePyG(r *epoch.Result, seeds []uint32) (nid []uint32, src, dst [][]int, eids [][]int64) {
	local := map[uint32]int{}
	for i, v := range seeds {
		local[v] = i
		nid = append(nid, v)
	}
	lo, hi := 0, len(seeds)
	for h, ly := range r.Layers {
		var es, ed []int
		var ei []int64
		for i := lo; i < hi; i++ {
			row := slices.Index(ly.Frontier, nid[i])
			if row < 0 {
				panic(fmt.Sprintf("BrutePyG: node %d not in frontier %d", nid[i], h))
			}
			lo, hi := ly.Span(row)
			for t := lo; t < hi; t++ {
				s := ly.Samples[t]
				if s < 0 {
					continue
				}
				j, ok := local[uint32(s)]
				if !ok {
					j = len(nid)
					local[uint32(s)] = j
					nid = append(nid, uint32(s))
				}
				es, ed = append(es, j), append(ed, i)
				if ly.EdgeIDs != nil {
					ei = append(ei, ly.EdgeIDs[t])
				}
			}
		}
		src, dst, eids = append(src, es), append(dst, ed), append(eids, ei)
		lo, hi = hi, len(nid)
	}
	return nid, src, dst, eids
}

// EqualPyG compares epoch.PyG-semantics epoch.Blocks with BrutePyG's rendering: the
// last hop's src is n_id, hop h's dst the nodes first reached at hop h-1,
// its edges (src into n_id, dst into dst shifted by dst's place in n_id).
func EqualPyG(b *epoch.Blocks, r *epoch.Result, seeds []uint32) error {
	nid, src, dst, eids := BrutePyG(r, seeds)
	if b.Semantics != epoch.PyG || !slices.Equal(b.Nodes(), nid) || len(b.Hops) != len(r.Layers) {
		return fmt.Errorf("semantics %v, n_id %v, want %v", b.Semantics, b.Nodes(), nid)
	}
	known := len(seeds)
	for h, hop := range b.Hops {
		lo := known - len(hop.Dst)
		if lo < 0 || !slices.Equal(hop.Dst, nid[lo:known]) || !slices.Equal(hop.Src, nid[:len(hop.Src)]) {
			return fmt.Errorf("hop %d: dst %v / src %v are not n_id[%d:%d] / a prefix of n_id", h+1, hop.Dst, hop.Src, lo, known)
		}
		if len(hop.EdgeSrc) != len(src[h]) || len(hop.EdgeDst) != len(src[h]) {
			return fmt.Errorf("hop %d: %d edges, want %d", h+1, len(hop.EdgeSrc), len(src[h]))
		}
		for e := range hop.EdgeSrc {
			if int(hop.EdgeSrc[e]) != src[h][e] || lo+int(hop.EdgeDst[e]) != dst[h][e] {
				return fmt.Errorf("hop %d edge %d: (%d, %d+%d), want (%d, %d)", h+1, e, hop.EdgeSrc[e], lo, hop.EdgeDst[e], src[h][e], dst[h][e])
			}
		}
		if !slices.Equal(hop.EdgeIDs, eids[h]) || (hop.EdgeIDs == nil) != (eids[h] == nil && r.Layers[h].EdgeIDs == nil) {
			return fmt.Errorf("hop %d: edge ids %v, want %v", h+1, hop.EdgeIDs, eids[h])
		}
		known = len(hop.Src)
	}
	return nil
}

// EqualBlocks names the first field in which a and b differ, or returns nil.
func EqualBlocks(a, b *epoch.Blocks) error {
	if a.Epoch != b.Epoch || !slices.Equal(a.Seeds, b.Seeds) || len(a.Hops) != len(b.Hops) {
		return fmt.Errorf("header differs: epoch %d/%d, %d/%d hops", a.Epoch, b.Epoch, len(a.Hops), len(b.Hops))
	}
	for h := range a.Hops {
		x, y := a.Hops[h], b.Hops[h]
		for _, c := range []struct {
			name string
			eq   bool
		}{
			{"dst", slices.Equal(x.Dst, y.Dst)},
			{"src", slices.Equal(x.Src, y.Src)},
			{"edge_src", slices.Equal(x.EdgeSrc, y.EdgeSrc)},
			{"edge_dst", slices.Equal(x.EdgeDst, y.EdgeDst)},
			{"e_id", slices.Equal(x.EdgeIDs, y.EdgeIDs) && (x.EdgeIDs == nil) == (y.EdgeIDs == nil)},
		} {
			if !c.eq {
				return fmt.Errorf("hop %d: %s differs", h+1, c.name)
			}
		}
	}
	return nil
}

// Synthetic builds an epoch over numNodes nodes without a graph:
// each frontier node's row holds fanout uniform node ids, with a
// degree-like share of -1 padding (about 1 row in 8 short). Frontiers are
// built with NextFrontier, so the Result is valid.
func Synthetic(numNodes uint32, train int, fanouts []int, seed uint64) *epoch.Result {
	r := rand.New(rand.NewPCG(seed, 1))
	f := make([]uint32, train)
	for i := range f {
		f[i] = r.Uint32N(numNodes)
	}
	slices.Sort(f)
	f = slices.Compact(f)
	key := epoch.Key{Seed: seed}
	res := &epoch.Result{Key: key}
	for l, k := range fanouts {
		s := make([]int32, len(f)*k)
		lk := key.Layer(l)
		for i, v := range f {
			row := s[i*k : (i+1)*k]
			d := k
			if rng.Draw(lk, v, 1<<31)%8 == 0 {
				d = int(rng.Below(rng.Draw(lk, v, 1<<31+1), uint32(k)))
			}
			for t := range row {
				if t < d {
					row[t] = int32(rng.Below(rng.Draw(lk, v, uint32(t)), numNodes))
				} else {
					row[t] = -1
				}
			}
		}
		res.Layers = append(res.Layers, epoch.Layer{Frontier: f, Fanout: k, Samples: s})
		f = epoch.NextFrontier(f, s)
	}
	res.Final = f
	return res
}
