package heterosample

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
)

// requireEqual fails unless got and want are the same epoch: frontiers of
// every type and layer, and every relation's layer, bytes for bytes.
func requireEqual(t *testing.T, got, want *heteroepoch.Result) {
	t.Helper()
	if got.Key != want.Key || len(got.Layers) != len(want.Layers) || len(got.Frontiers) != len(want.Frontiers) {
		t.Fatalf("key/layers differ: %v/%d vs %v/%d", got.Key, len(got.Layers), want.Key, len(want.Layers))
	}
	for l := range want.Frontiers {
		for ty := range want.Frontiers[l] {
			if !slices.Equal(got.Frontiers[l][ty], want.Frontiers[l][ty]) {
				t.Fatalf("frontier %d of type %s differs: %d vs %d nodes", l, want.Schema.NodeTypes[ty].Name, len(got.Frontiers[l][ty]), len(want.Frontiers[l][ty]))
			}
		}
	}
	for l := range want.Layers {
		for r := range want.Layers[l] {
			g, w := got.Layers[l][r], want.Layers[l][r]
			name := fmt.Sprintf("layer %d relation %s", l, want.Schema.Relations[r])
			if g.Fanout != w.Fanout || !slices.Equal(g.Frontier, w.Frontier) {
				t.Fatalf("%s: fanout %d/%d or frontier differs", name, g.Fanout, w.Fanout)
			}
			if !slices.Equal(g.Samples, w.Samples) || !slices.Equal(g.EdgeIDs, w.EdgeIDs) || !slices.Equal(g.Offsets, w.Offsets) {
				t.Fatalf("%s: samples, edge ids or offsets differ", name)
			}
			if (len(w.Samples) > 0) && (g.EdgeIDs == nil) != (w.EdgeIDs == nil) {
				t.Fatalf("%s: edge ids present %v, want %v", name, g.EdgeIDs != nil, w.EdgeIDs != nil)
			}
		}
	}
}

// TestSamplerEqualsReference is the core property: a heterogeneous epoch
// streamed through the emulated devices (1 and 3 devices, small chunks and
// small launches, the SmartSSD path of peer-to-peer reads into device
// buffers, a chunk cache shared out) is the keyed reference's, byte for
// byte, edge ids included, with fanouts mixing fixed, full (-1) and
// unsampled (0) hops, seeds of one type or two.
func TestSamplerEqualsReference(t *testing.T) {
	f := academic(400, 700, 3)
	small := f.write(t, 1024)
	one := f.write(t, 8<<20)
	fanouts := [][]int{{3, 2, epoch.AllNeighbors}, {2, 0, 3}, {epoch.AllNeighbors, 4, 1}}
	seedsPaper := []heteroepoch.Seeds{{Type: "paper", Nodes: pick(700, 60, 1)}}
	seedsBoth := []heteroepoch.Seeds{{Type: "author", Nodes: pick(400, 20, 2)}, {Type: "paper", Nodes: pick(700, 30, 4)}}
	for _, tc := range []struct {
		name  string
		dirs  []string
		opts  host.Options
		seeds []heteroepoch.Seeds
		key   epoch.Key
	}{
		{"emu 1 device", small, host.Options{Devices: 1, EdgeIDs: true}, seedsPaper, epoch.Key{Seed: 5, Epoch: 0}},
		{"emu 3 devices, small launches", small, host.Options{Devices: 3, MaxTargets: 3, EdgeIDs: true}, seedsBoth, epoch.Key{Seed: 5, Epoch: 1, Replace: true}},
		{"emu 3 devices, shared cache", small, host.Options{Devices: 3, EdgeIDs: true, ChunkCache: 64 << 10}, seedsPaper, epoch.Key{Seed: 9, Epoch: 2}},
		{"smartssd path (peer-to-peer into device buffers)", small, host.Options{Devices: 2, VerifyReads: true, EdgeIDs: true}, seedsBoth, epoch.Key{Seed: 9, Epoch: 3}},
		{"one chunk, no edge ids", one, host.Options{Devices: 1}, seedsBoth, epoch.Key{Seed: 1, Epoch: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(f.schema, tc.dirs, Options{Host: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := s.SampleEpoch(context.Background(), tc.seeds, fanouts, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Reference(f.schema, f.graphs(), tc.seeds, fanouts, tc.key, tc.opts.EdgeIDs)
			if err != nil {
				t.Fatal(err)
			}
			requireEqual(t, got, want)
			if got.SampledEdges() == 0 || len(got.Frontiers[3][0]) == 0 || len(got.Frontiers[3][1]) == 0 {
				t.Fatalf("degenerate epoch: %d edges, final frontiers %d/%d", got.SampledEdges(), len(got.Frontiers[3][0]), len(got.Frontiers[3][1]))
			}
			// The same sampler again (warm caches) gives the same bytes.
			again, err := s.SampleEpoch(context.Background(), tc.seeds, fanouts, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			requireEqual(t, again, want)
		})
	}
}

// TestFrontierInvariants: frontiers are nested, and frontier l+1 of type s
// is exactly frontier l of s with the valid samples of the relations whose
// src is s; an unsampled relation (fanout 0) has no samples.
func TestFrontierInvariants(t *testing.T) {
	f := academic(200, 300, 8)
	fanouts := [][]int{{2, 0}, {1, 3}, {0, 2}}
	res, err := Reference(f.schema, f.graphs(), []heteroepoch.Seeds{{Type: "paper", Nodes: pick(300, 10, 3)}}, fanouts, epoch.Key{Seed: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := f.schema.RelTypes()
	for l := range res.Layers {
		for ty := range f.schema.NodeTypes {
			want := map[uint32]bool{}
			for _, v := range res.Frontiers[l][ty] {
				want[v] = true
			}
			for r, ly := range res.Layers[l] {
				if fanouts[r][l] == 0 && ly.Samples != nil {
					t.Fatalf("layer %d relation %d: fanout 0 with samples", l, r)
				}
				if src[r] != ty {
					continue
				}
				for _, x := range ly.Samples {
					if x >= 0 {
						want[uint32(x)] = true
					}
				}
			}
			if len(want) != len(res.Frontiers[l+1][ty]) {
				t.Fatalf("frontier %d of type %d: %d nodes, want %d", l+1, ty, len(res.Frontiers[l+1][ty]), len(want))
			}
			for _, v := range res.Frontiers[l+1][ty] {
				if !want[v] {
					t.Fatalf("frontier %d of type %d holds %d", l+1, ty, v)
				}
			}
		}
	}
	// Seeds are papers: authors first appear through writes at hop 1.
	if len(res.Frontiers[0][0]) != 0 || len(res.Frontiers[1][0]) == 0 {
		t.Fatalf("authors in frontiers 0/1: %v %v", res.Frontiers[0][0], res.Frontiers[1][0])
	}
}

// TestRelationInKey: two relations over the same graph sample differently
// (the relation's index is in the key), and the one that is relation 0
// samples as the homogeneous epoch of that graph does.
func TestRelationInKey(t *testing.T) {
	r := splitmix(4)
	g := inCSR(randomEdges(&r, 4000, 500, 500), 500, 500)
	schema := &heteroepoch.Schema{NodeTypes: []heteroepoch.NodeType{{Name: "n", Count: 500}}, Relations: []heteroepoch.Relation{{Src: "n", Name: "a", Dst: "n"}, {Src: "n", Name: "b", Dst: "n"}}}
	seeds := pick(500, 50, 6)
	res, err := Reference(schema, []host.Adjacency{g, g}, []heteroepoch.Seeds{{Type: "n", Nodes: seeds}}, [][]int{{4}, {4}}, epoch.Key{Seed: 2, Epoch: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(res.Layers[0][0].Samples, res.Layers[0][1].Samples) {
		t.Fatal("relations 0 and 1 over the same graph gave the same samples")
	}
	homo, err := host.Reference(g, seeds, []int{4}, epoch.Key{Seed: 2, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Layers[0][0].Samples, homo.Layers[0].Samples) {
		t.Fatal("relation 0 does not sample as the homogeneous epoch")
	}
}

// TestHomogeneousAsOneRelation: a homogeneous graph seen as a one-type,
// one-relation heterogeneous graph gives exactly today's epoch (relation 0
// has no relation term), streamed or not, and its minibatches are the
// homogeneous assembler's, under both semantics.
func TestHomogeneousAsOneRelation(t *testing.T) {
	r := splitmix(12)
	g := inCSR(randomEdges(&r, 6000, 800, 800), 800, 800)
	dir := filepath.Join(t.TempDir(), "g")
	writeCSR(t, dir, g, 2048)
	schema := &heteroepoch.Schema{NodeTypes: []heteroepoch.NodeType{{Name: "node", Count: 800}}, Relations: []heteroepoch.Relation{{Src: "node", Name: "to", Dst: "node"}}}
	seeds := pick(800, 64, 2)
	fanouts := []int{5, epoch.AllNeighbors, 3}
	key := epoch.Key{Seed: 77, Epoch: 4}
	s, err := Open(schema, []string{dir}, Options{Host: host.Options{Devices: 2, EdgeIDs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	het, err := s.SampleEpoch(context.Background(), []heteroepoch.Seeds{{Type: "node", Nodes: seeds}}, [][]int{fanouts}, key)
	if err != nil {
		t.Fatal(err)
	}
	homo, err := host.ReferenceEdgeIDs(g, seeds, fanouts, key)
	if err != nil {
		t.Fatal(err)
	}
	for l := range fanouts {
		h, w := het.Layers[l][0], homo.Layers[l]
		if !slices.Equal(h.Frontier, w.Frontier) || !slices.Equal(h.Samples, w.Samples) || !slices.Equal(h.EdgeIDs, w.EdgeIDs) || !slices.Equal(h.Offsets, w.Offsets) {
			t.Fatalf("layer %d differs from the homogeneous epoch", l)
		}
	}
	if !slices.Equal(het.Frontiers[3][0], homo.Final) {
		t.Fatal("final frontier differs")
	}
	batch := seeds[10:42]
	for _, sem := range []epoch.Semantics{epoch.DGL, epoch.PyG} {
		hb, err := homo.Assemble(batch, sem)
		if err != nil {
			t.Fatal(err)
		}
		if sem == epoch.PyG {
			pb, err := het.AssemblePyG([]heteroepoch.Seeds{{Type: "node", Nodes: batch}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pb.Nodes[0].NID, hb.Nodes()) {
				t.Fatal("PyG n_id differs from the homogeneous assembler's")
			}
			// edge_index is every hop's [edge_src; lo + edge_dst], lo
			// where hop h's dst (the tail of hop h-1's src) starts in n_id.
			var row, col []int32
			var eid []int64
			prev := 0
			for h, hop := range hb.Hops {
				lo := int32(0)
				if h > 0 {
					lo = int32(prev - len(hop.Dst))
				}
				row = append(row, hop.EdgeSrc...)
				for _, d := range hop.EdgeDst {
					col = append(col, lo+d)
				}
				eid = append(eid, hop.EdgeIDs...)
				prev = len(hop.Src)
			}
			if !slices.Equal(pb.Edges[0].Row, row) || !slices.Equal(pb.Edges[0].Col, col) || !slices.Equal(pb.Edges[0].EID, eid) {
				t.Fatal("PyG edge_index/e_id differ from the homogeneous assembler's")
			}
			continue
		}
		blocks, err := het.AssembleDGL([]heteroepoch.Seeds{{Type: "node", Nodes: batch}})
		if err != nil {
			t.Fatal(err)
		}
		for h, hop := range hb.Hops {
			b := blocks[h]
			if !slices.Equal(b.DstNID[0], hop.Dst) || !slices.Equal(b.SrcNID[0], hop.Src) || !slices.Equal(b.Edges[0].Src, hop.EdgeSrc) || !slices.Equal(b.Edges[0].Dst, hop.EdgeDst) || !slices.Equal(b.Edges[0].EID, hop.EdgeIDs) {
				t.Fatalf("DGL hop %d differs from the homogeneous assembler's", h+1)
			}
		}
	}
}

// TestBadInput: each bad request is an error wrapping ErrInvalid (or the
// sentinel named) that names the type, relation or value.
func TestBadInput(t *testing.T) {
	f := academic(50, 80, 1)
	good := [][]int{{2}, {2}, {2}}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		seeds   []heteroepoch.Seeds
		fanouts [][]int
		want    string
	}{
		{"unknown seed type", []heteroepoch.Seeds{{Type: "venue", Nodes: []uint32{1}}}, good, `unknown node type "venue"`},
		{"seed beyond its type", []heteroepoch.Seeds{{Type: "author", Nodes: []uint32{50}}}, good, `seed 50 (position 0) of node type "author" is not a node: the type has 50 nodes`},
		{"seed type twice", []heteroepoch.Seeds{{Type: "author", Nodes: []uint32{1}}, {Type: "author", Nodes: []uint32{2}}}, good, `node type "author" given twice`},
		{"fanout lists of different lengths", []heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{1}}}, [][]int{{2, 2}, {2}, {2, 2}}, "relation paper___cites___paper has 1 fanouts but relation author___writes___paper has 2"},
		{"missing relation", []heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{1}}}, [][]int{{2}, {2}}, "2 fanout lists for 3 relations"},
		{"fanout 65", []heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{1}}}, [][]int{{2}, {65}, {2}}, "relation paper___cites___paper: fanout 65 of layer 0"},
		{"no layers", []heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{1}}}, [][]int{{}, {}, {}}, "0 fanouts"},
	} {
		_, err := Reference(f.schema, f.graphs(), tc.seeds, tc.fanouts, epoch.Key{}, false)
		if !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid with %q", tc.name, err, tc.want)
		}
		rels := []LayerSampler{MemoryLayers{Graph: f.csrs[0]}, MemoryLayers{Graph: f.csrs[1]}, MemoryLayers{Graph: f.csrs[2]}}
		_, err = Sample(ctx, f.schema, rels, tc.seeds, tc.fanouts, epoch.Key{})
		if !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Sample %s: %v, want ErrInvalid with %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		schema heteroepoch.Schema
		want   string
	}{
		{"unknown relation type", heteroepoch.Schema{NodeTypes: []heteroepoch.NodeType{{Name: "a", Count: 1}}, Relations: []heteroepoch.Relation{{Src: "a", Name: "r", Dst: "b"}}}, `relation 0 (a___r___b): unknown node type "b"`},
		{"type twice", heteroepoch.Schema{NodeTypes: []heteroepoch.NodeType{{Name: "a", Count: 1}, {Name: "a", Count: 2}}, Relations: []heteroepoch.Relation{{Src: "a", Name: "r", Dst: "a"}}}, `node type "a" listed twice`},
		{"relation twice", heteroepoch.Schema{NodeTypes: []heteroepoch.NodeType{{Name: "a", Count: 1}}, Relations: []heteroepoch.Relation{{Src: "a", Name: "r", Dst: "a"}, {Src: "a", Name: "r", Dst: "a"}}}, "relation a___r___a listed twice"},
	} {
		if err := tc.schema.Validate(); !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid with %q", tc.name, err, tc.want)
		}
	}
	// PyG's num_neighbors dict rules.
	if _, err := f.schema.FanoutsFromMap(map[string][]int{"author___writes___paper": {2}, "paper___cites___paper": {2}}, nil); !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), "no fanouts for relation paper___rev_writes___author") {
		t.Errorf("missing relation without default: %v", err)
	}
	if _, err := f.schema.FanoutsFromMap(map[string][]int{"paper___writes___paper": {2}}, []int{1}); !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), `"paper___writes___paper", which is not a relation`) {
		t.Errorf("unknown relation: %v", err)
	}
	if got, err := f.schema.FanoutsFromMap(map[string][]int{"paper___cites___paper": {5, 0}}, []int{1, 2}); err != nil || !slices.Equal(got[0], []int{1, 2}) || !slices.Equal(got[1], []int{5, 0}) || !slices.Equal(got[2], []int{1, 2}) {
		t.Errorf("default: %v %v", got, err)
	}
	// Minibatch seeds: repeated, or outside frontier_0.
	res, err := Reference(f.schema, f.graphs(), []heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{1, 2, 3}}}, good, epoch.Key{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.AssemblePyG([]heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{1, 1}}}); !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), "seed 1 of node type \"paper\" at positions 0 and 1") {
		t.Errorf("repeated seed: %v", err)
	}
	if _, err := res.AssembleDGL([]heteroepoch.Seeds{{Type: "paper", Nodes: []uint32{4}}}); !errors.Is(err, epoch.ErrNotInFrontier) || !strings.Contains(err.Error(), `seed 4 of node type "paper"`) {
		t.Errorf("seed outside frontier_0: %v", err)
	}
}

// TestOpenErrors: the GPU backend is refused as not yet supported, a
// relation directory of the wrong size and a store breaking the typed
// bound are named.
func TestOpenErrors(t *testing.T) {
	f := academic(50, 80, 1)
	dirs := f.write(t, 4096)
	for _, o := range []Options{{Backend: BackendGPU}, {Host: host.Options{Backend: BackendGPU}}} {
		if _, err := Open(f.schema, dirs, o); !errors.Is(err, ErrNotYet) || !strings.Contains(err.Error(), "gpu backend") {
			t.Errorf("gpu: %v, want ErrNotYet", err)
		}
	}
	small := filepath.Join(t.TempDir(), "small")
	writeCSR(t, small, &host.CSR{Indptr: make([]uint64, 61)}, 4096)
	_, err := Open(f.schema, []string{dirs[0], dirs[1], small}, Options{})
	if !errors.Is(err, heteroepoch.ErrInvalid) || !strings.Contains(err.Error(), "relation paper___rev_writes___author") || !strings.Contains(err.Error(), "graph has 60 nodes, want max(count(paper), count(author)) = 80") {
		t.Errorf("wrong directory: %v", err)
	}
	// A store whose neighbors are paper ids where author ids are due:
	// the graph is valid (ids below num_nodes = 80), the typed bound is
	// not (authors are 0..49).
	bad := *f
	bad.schema = &heteroepoch.Schema{NodeTypes: f.schema.NodeTypes, Relations: f.schema.Relations}
	r := splitmix(3)
	bad.csrs = []*host.CSR{inCSR(randomEdges(&r, 200, 80, 80), 80, 80), f.csrs[1], f.csrs[2]}
	bdirs := bad.write(t, 4096)
	s, err := Open(bad.schema, bdirs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.SampleEpoch(context.Background(), []heteroepoch.Seeds{{Type: "paper", Nodes: pick(80, 40, 1)}}, [][]int{{8}, {1}, {1}}, epoch.Key{})
	if !errors.Is(err, ErrBadSample) || !strings.Contains(err.Error(), "relation author___writes___paper") || !strings.Contains(err.Error(), "the source type has 50 nodes") {
		t.Errorf("typed bound: %v", err)
	}
}

// TestStatsAndCancel: the epoch's statistics account for every sampled
// relation layer (targets = its frontier, slots = its valid samples) and
// none other; a cancelled context stops the epoch with context.Canceled.
func TestStatsAndCancel(t *testing.T) {
	f := academic(200, 300, 5)
	s, err := Open(f.schema, f.write(t, 1024), Options{Host: host.Options{Devices: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fanouts := [][]int{{2, 0}, {3, epoch.AllNeighbors}, {1, 2}}
	seeds := []heteroepoch.Seeds{{Type: "paper", Nodes: pick(300, 20, 1)}}
	res, st, err := s.SampleEpochStats(context.Background(), seeds, fanouts, epoch.Key{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if st.BytesRead() == 0 || st.Wall <= 0 {
		t.Fatalf("stats: %d bytes read, wall %v", st.BytesRead(), st.Wall)
	}
	for l, layer := range res.Layers {
		for r, ly := range layer {
			ls := st.Layers[l][r]
			if ly.Fanout == 0 || len(ly.Frontier) == 0 {
				if ls != nil {
					t.Fatalf("layer %d relation %d: stats for a layer not sampled", l, r)
				}
				continue
			}
			var valid int64
			for _, x := range ly.Samples {
				if x >= 0 {
					valid++
				}
			}
			if ls == nil || ls.Targets != len(ly.Frontier) || ls.SampledSlots != valid || ls.Fanout != ly.Fanout {
				t.Fatalf("layer %d relation %d: stats %+v for %d targets, %d samples", l, r, ls, len(ly.Frontier), valid)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.SampleEpoch(ctx, seeds, fanouts, epoch.Key{Seed: 4}); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "relation author___writes___paper") {
		t.Fatalf("cancelled: %v", err)
	}
}
