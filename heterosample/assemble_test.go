package heterosample

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/rng"
)

// brutePyG is pyg-lib's heterogeneous neighbor sampling
// (pyg_lib/csrc/sampler/cpu/neighbor_kernel.cpp, `sample` for
// heterogeneous graphs, csc = true as PyG's NeighborSampler calls it)
// written out plainly from the graphs themselves, with this project's
// random-number contract choosing each node's positions: it never looks at
// an epoch's Result, so it checks both the assembly and the claim that a
// node's sample is a function of (key, layer, relation, node) only.
//
//	sampled_nodes[t] = seeds of t; mapper[t] knows them; slice[t] = [0, |seeds_t|)
//	for ell in hops:
//	  for edge type k = (s, rel, d) in order:            # csc: expand d, reach s
//	    count = num_neighbors[k][ell]
//	    for i in slice[d]:
//	      v = sampled_nodes[d][i]
//	      positions of v's row (count 0: none; -1 or count >= degree without
//	        replacement: all, in order; otherwise the sampled ones in order)
//	      for each position p: x = col[rowptr[v] + p]
//	        j = mapper[s].insert(x) (appending x to sampled_nodes[s] if new)
//	        edge: row j (src local), col i (dst local), id rowptr[v] + p
//	        num_sampled_edges[k][ell] += 1
//	  for every type t: slice[t] = [slice[t].end, |sampled_nodes[t]|)
//	  num_sampled_nodes[t].append(|slice[t]|)
func brutePyG(schema *heteroepoch.Schema, csrs []*host.CSR, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) *heteroepoch.PyGBatch {
	T, R, L := len(schema.NodeTypes), len(schema.Relations), len(fanouts[0])
	b := &heteroepoch.PyGBatch{Nodes: make([]heteroepoch.PyGNodes, T), Edges: make([]heteroepoch.PyGEdges, R)}
	mapper := make([]map[uint32]int32, T)
	begin, end := make([]int, T), make([]int, T)
	for t := range b.Nodes {
		mapper[t] = map[uint32]int32{}
		for _, sd := range seeds {
			if sd.Type == schema.NodeTypes[t].Name {
				b.Nodes[t].NID = slices.Clone(sd.Nodes)
			}
		}
		for i, v := range b.Nodes[t].NID {
			mapper[t][v] = int32(i)
		}
		end[t] = len(b.Nodes[t].NID)
		b.Nodes[t].BatchSize = end[t]
		b.Nodes[t].NumSampledNodes = []int{end[t]}
	}
	for r := range b.Edges {
		b.Edges[r].NumSampledEdges = make([]int, L)
	}
	for ell := 0; ell < L; ell++ {
		for r, rel := range schema.Relations {
			count := fanouts[r][ell]
			s, d := schema.TypeIndex(rel.Src), schema.TypeIndex(rel.Dst)
			lkey := rng.RelationKey(key.Seed, key.Epoch, ell, uint32(r))
			for i := begin[d]; i < end[d]; i++ {
				v := b.Nodes[d].NID[i]
				nb, _ := csrs[r].Neighbors(v)
				var pos []int32
				switch {
				case count == 0:
				case count == epoch.AllNeighbors:
					for p := range nb {
						pos = append(pos, int32(p))
					}
				default:
					pos = make([]int32, count)
					rng.Positions(pos, len(nb), v, lkey, key.Replace)
				}
				for _, p := range pos {
					if p < 0 {
						continue
					}
					x := nb[p]
					j, ok := mapper[s][x]
					if !ok {
						j = int32(len(b.Nodes[s].NID))
						mapper[s][x] = j
						b.Nodes[s].NID = append(b.Nodes[s].NID, x)
					}
					e := &b.Edges[r]
					e.Row = append(e.Row, j)
					e.Col = append(e.Col, int32(i))
					e.EID = append(e.EID, int64(csrs[r].Indptr[v])+int64(p))
					e.NumSampledEdges[ell]++
				}
			}
		}
		for t := range b.Nodes {
			begin[t], end[t] = end[t], len(b.Nodes[t].NID)
			b.Nodes[t].NumSampledNodes = append(b.Nodes[t].NumSampledNodes, end[t]-begin[t])
		}
	}
	return b
}

// requirePyG fails unless got equals want field by field (nil and empty
// arrays alike).
func requirePyG(t *testing.T, schema *heteroepoch.Schema, got, want *heteroepoch.PyGBatch) {
	t.Helper()
	for ty, w := range want.Nodes {
		g := got.Nodes[ty]
		if !slices.Equal(g.NID, w.NID) || !slices.Equal(g.NumSampledNodes, w.NumSampledNodes) || g.BatchSize != w.BatchSize {
			t.Fatalf("node type %s: n_id %v num_sampled_nodes %v batch_size %d, want %v %v %d", schema.NodeTypes[ty].Name, g.NID, g.NumSampledNodes, g.BatchSize, w.NID, w.NumSampledNodes, w.BatchSize)
		}
	}
	for r, w := range want.Edges {
		g := got.Edges[r]
		if !slices.Equal(g.Row, w.Row) || !slices.Equal(g.Col, w.Col) || !slices.Equal(g.EID, w.EID) || !slices.Equal(g.NumSampledEdges, w.NumSampledEdges) {
			t.Fatalf("edge type %s: edge_index [%v %v] e_id %v num_sampled_edges %v, want [%v %v] %v %v", schema.Relations[r], g.Row, g.Col, g.EID, g.NumSampledEdges, w.Row, w.Col, w.EID, w.NumSampledEdges)
		}
	}
}

// TestPyGEqualsIndependentRendering: on the academic fixture, every
// minibatch of a streamed epoch (seeds of one type, then of two; shuffled
// order; fixed, full and unsampled hops; with and without replacement)
// assembles to exactly what brutePyG computes from the graphs.
func TestPyGEqualsIndependentRendering(t *testing.T) {
	f := academic(300, 500, 21)
	dirs := f.write(t, 2048)
	s, err := Open(f.schema, dirs, Options{Host: host.Options{Devices: 3, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		fanouts [][]int
		replace bool
	}{
		{[][]int{{3, 2}, {2, 3}, {2, 2}}, false},
		{[][]int{{4, 0, 2}, {epoch.AllNeighbors, 2, 1}, {0, 3, epoch.AllNeighbors}}, true},
	} {
		papers, authors := pick(500, 120, 5), pick(300, 60, 6)
		key := epoch.Key{Seed: 31, Epoch: 2, Replace: tc.replace}
		res, err := s.SampleEpoch(context.Background(), []heteroepoch.Seeds{{Type: "paper", Nodes: papers}, {Type: "author", Nodes: authors}}, tc.fanouts, key)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < 4; b++ {
			batch := []heteroepoch.Seeds{{Type: "paper", Nodes: papers[b*30 : (b+1)*30]}}
			if b%2 == 1 {
				batch = append(batch, heteroepoch.Seeds{Type: "author", Nodes: authors[b*15 : (b+1)*15]})
			}
			got, err := res.AssemblePyG(batch)
			if err != nil {
				t.Fatal(err)
			}
			want := brutePyG(f.schema, f.csrs, batch, tc.fanouts, key)
			requirePyG(t, f.schema, got, want)
			var edges int
			for _, e := range got.Edges {
				edges += len(e.Row)
			}
			if edges == 0 || len(got.Nodes[0].NID) == 0 {
				t.Fatalf("degenerate minibatch: %d edges, %d authors", edges, len(got.Nodes[0].NID))
			}
		}
	}
}

// tiny is a hand-sized academic graph: authors a0..a2, papers p0..p3;
// writes a0→p0 a1→p0 a1→p1 a2→p2 a0→p3; cites p1→p0 p2→p0 p3→p1 p0→p2;
// rev_writes the reverse of writes.
func tiny() *fixture {
	writes := []edge{{0, 0}, {1, 0}, {1, 1}, {2, 2}, {0, 3}}
	cites := []edge{{1, 0}, {2, 0}, {3, 1}, {0, 2}}
	return &fixture{
		schema: &heteroepoch.Schema{
			NodeTypes: []heteroepoch.NodeType{{Name: "author", Count: 3}, {Name: "paper", Count: 4}},
			Relations: []heteroepoch.Relation{{Src: "author", Name: "writes", Dst: "paper"}, {Src: "paper", Name: "cites", Dst: "paper"}, {Src: "paper", Name: "rev_writes", Dst: "author"}},
		},
		csrs: []*host.CSR{inCSR(writes, 3, 4), inCSR(cites, 4, 4), inCSR(reversed(writes), 4, 3)},
	}
}

// TestTinyByHand: fanouts above every degree take whole rows in CSR
// order, so the minibatch of seeds (p2, p0) is worked out by hand here
// (the stores: writes rows p0 [a0 a1] p1 [a1] p2 [a2] p3 [a0], indptr
// 0 2 3 4 5; cites rows p0 [p1 p2] p1 [p3] p2 [p0] p3 [], indptr 0 2 3 4 4;
// rev_writes rows a0 [p0 p3] a1 [p0 p1] a2 [p2] (a3, padding) [], indptr
// 0 2 4 5 5).
func TestTinyByHand(t *testing.T) {
	f := tiny()
	if want := []uint64{0, 2, 4, 5, 5}; !slices.Equal(f.csrs[2].Indptr, want) {
		t.Fatalf("rev_writes indptr %v, want %v", f.csrs[2].Indptr, want)
	}
	fanouts := [][]int{{5, epoch.AllNeighbors}, {5, 5}, {5, 5}}
	seeds := []heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{2, 0}}}
	dirs := f.write(t, 4096)
	s, err := Open(f.schema, dirs, Options{Host: host.Options{EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.SampleEpoch(context.Background(), seeds, fanouts, epoch.Key{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}

	// PyG. Hop 1 expands the seeds p2, p0 (paper locals 0, 1): writes
	// reaches a2, then a0, a1 (author locals 0, 1, 2); cites reaches p0
	// (local 1), then p1 (new, local 2) and p2 (local 0); rev_writes
	// expands no author (none was reached before hop 1). Hop 2 expands
	// what hop 1 added: p1 through writes (a1) and cites (p3, new: local
	// 3), and a2, a0, a1 through rev_writes.
	want := &heteroepoch.PyGBatch{
		Nodes: []heteroepoch.PyGNodes{
			{NID: []uint32{2, 0, 1}, NumSampledNodes: []int{0, 3, 0}, BatchSize: 0},
			{NID: []uint32{2, 0, 1, 3}, NumSampledNodes: []int{2, 1, 1}, BatchSize: 2},
		},
		Edges: []heteroepoch.PyGEdges{
			{Row: []int32{0, 1, 2, 2}, Col: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}, NumSampledEdges: []int{3, 1}},
			{Row: []int32{1, 2, 0, 3}, Col: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}, NumSampledEdges: []int{3, 1}},
			{Row: []int32{0, 1, 3, 1, 2}, Col: []int32{0, 1, 1, 2, 2}, EID: []int64{4, 0, 1, 2, 3}, NumSampledEdges: []int{0, 5}},
		},
	}
	got, err := res.AssemblePyG(seeds)
	if err != nil {
		t.Fatal(err)
	}
	requirePyG(t, f.schema, got, want)
	requirePyG(t, f.schema, brutePyG(f.schema, f.csrs, seeds, fanouts, epoch.Key{Seed: 1}), want)

	// DGL. Hop 1: dst papers [p2 p0], no authors; src nodes start with
	// the dst nodes. Hop 2: dst = hop 1's src, every one expanded again.
	wantDGL := []heteroepoch.DGLBlock{
		{
			DstNID: [][]uint32{{}, {2, 0}},
			SrcNID: [][]uint32{{2, 0, 1}, {2, 0, 1}},
			Edges: []heteroepoch.DGLEdges{
				{Src: []int32{0, 1, 2}, Dst: []int32{0, 1, 1}, EID: []int64{3, 0, 1}},
				{Src: []int32{1, 2, 0}, Dst: []int32{0, 1, 1}, EID: []int64{3, 0, 1}},
				{Src: []int32{}, Dst: []int32{}, EID: []int64{}},
			},
		},
		{
			DstNID: [][]uint32{{2, 0, 1}, {2, 0, 1}},
			SrcNID: [][]uint32{{2, 0, 1}, {2, 0, 1, 3}},
			Edges: []heteroepoch.DGLEdges{
				{Src: []int32{0, 1, 2, 2}, Dst: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}},
				{Src: []int32{1, 2, 0, 3}, Dst: []int32{0, 1, 1, 2}, EID: []int64{3, 0, 1, 2}},
				{Src: []int32{0, 1, 3, 1, 2}, Dst: []int32{0, 1, 1, 2, 2}, EID: []int64{4, 0, 1, 2, 3}},
			},
		},
	}
	blocks, err := res.AssembleDGL(seeds)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(blocks, wantDGL) {
		t.Fatalf("DGL blocks\n got %+v\nwant %+v", blocks, wantDGL)
	}
	for h, b := range blocks {
		for ty := range b.DstNID {
			if !slices.Equal(b.SrcNID[ty][:len(b.DstNID[ty])], b.DstNID[ty]) {
				t.Fatalf("hop %d type %d: src nodes do not start with the dst nodes", h+1, ty)
			}
		}
	}
}

// positions is the sample of node v in relation r at layer ell, from the
// graph itself: its positions (all of them for a full layer).
func positions(csr *host.CSR, v uint32, count int, lkey uint64, replace bool) []int32 {
	nb, _ := csr.Neighbors(v)
	if count == epoch.AllNeighbors {
		pos := make([]int32, len(nb))
		for p := range pos {
			pos[p] = int32(p)
		}
		return pos
	}
	pos := make([]int32, count)
	rng.Positions(pos, len(nb), v, lkey, replace)
	return pos
}

// bruteDGL is DGL's heterograph blocks written out from the graphs
// themselves (never the Result): hop 1's dst nodes are the seeds of each
// type, each hop's src nodes of a type start with its dst nodes, every
// dst node is expanded by every relation into it (relations in order,
// nodes in order, slots in order), new neighbors appended in order of
// first appearance, and hop h+1's dst nodes are hop h's src nodes.
func bruteDGL(schema *heteroepoch.Schema, csrs []*host.CSR, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) []heteroepoch.DGLBlock {
	T, L := len(schema.NodeTypes), len(fanouts[0])
	dst := make([][]uint32, T)
	for t := range dst {
		dst[t] = []uint32{}
		for _, sd := range seeds {
			if sd.Type == schema.NodeTypes[t].Name {
				dst[t] = slices.Clone(sd.Nodes)
			}
		}
	}
	var out []heteroepoch.DGLBlock
	for ell := 0; ell < L; ell++ {
		b := heteroepoch.DGLBlock{DstNID: dst, SrcNID: make([][]uint32, T)}
		where := make([]map[uint32]int32, T)
		for t := range dst {
			b.SrcNID[t] = slices.Clone(dst[t])
			where[t] = map[uint32]int32{}
			for i, v := range dst[t] {
				where[t][v] = int32(i)
			}
		}
		for r, rel := range schema.Relations {
			e := heteroepoch.DGLEdges{Src: []int32{}, Dst: []int32{}, EID: []int64{}}
			s, d := schema.TypeIndex(rel.Src), schema.TypeIndex(rel.Dst)
			if count := fanouts[r][ell]; count != 0 {
				for i, v := range dst[d] {
					nb, _ := csrs[r].Neighbors(v)
					for _, p := range positions(csrs[r], v, count, rng.RelationKey(key.Seed, key.Epoch, ell, uint32(r)), key.Replace) {
						if p < 0 {
							continue
						}
						j, ok := where[s][nb[p]]
						if !ok {
							j = int32(len(b.SrcNID[s]))
							where[s][nb[p]] = j
							b.SrcNID[s] = append(b.SrcNID[s], nb[p])
						}
						e.Src = append(e.Src, j)
						e.Dst = append(e.Dst, int32(i))
						e.EID = append(e.EID, int64(csrs[r].Indptr[v])+int64(p))
					}
				}
			}
			b.Edges = append(b.Edges, e)
		}
		out = append(out, b)
		dst = b.SrcNID
	}
	return out
}

// TestDGLEqualsIndependentRendering: minibatches of a streamed epoch of the
// academic fixture (one seed type, then two; fixed, full and unsampled
// hops) assemble to bruteDGL's blocks exactly.
func TestDGLEqualsIndependentRendering(t *testing.T) {
	f := academic(300, 500, 22)
	s, err := Open(f.schema, f.write(t, 2048), Options{Host: host.Options{Devices: 3, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fanouts := [][]int{{3, 0, 2}, {epoch.AllNeighbors, 2, 1}, {2, 3, epoch.AllNeighbors}}
	papers, authors := pick(500, 100, 7), pick(300, 50, 8)
	key := epoch.Key{Seed: 12, Epoch: 5, Replace: true}
	res, err := s.SampleEpoch(context.Background(), []heteroepoch.Seeds{{Type: "paper", Nodes: papers}, {Type: "author", Nodes: authors}}, fanouts, key)
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 4; b++ {
		batch := []heteroepoch.Seeds{{Type: "paper", Nodes: papers[b*25 : (b+1)*25]}}
		if b%2 == 1 {
			batch = append(batch, heteroepoch.Seeds{Type: "author", Nodes: authors[b*12 : (b+1)*12]})
		}
		got, err := res.AssembleDGL(batch)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteDGL(f.schema, f.csrs, batch, fanouts, key); !reflect.DeepEqual(got, want) {
			t.Fatalf("minibatch %d: DGL blocks differ from bruteDGL", b)
		}
	}
}
