package heterosample

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/internal/testgraph"
)

// byResidue splits a homogeneous in-edge graph into a typed one: node v is
// node v/k of type "t<v%k>", and each of the k² (src type, dst type) pairs
// is a relation holding exactly the edges between those types. Every edge
// of g is in exactly one relation.
func byResidue(g *host.CSR, k uint32) *fixture {
	n := g.NumNodes()
	f := &fixture{schema: &heteroepoch.Schema{}}
	counts := make([]uint32, k)
	for t := uint32(0); t < k; t++ {
		counts[t] = (n + k - 1 - t) / k
		f.schema.NodeTypes = append(f.schema.NodeTypes, heteroepoch.NodeType{Name: fmt.Sprintf("t%d", t), Count: counts[t]})
	}
	for s := uint32(0); s < k; s++ {
		for d := uint32(0); d < k; d++ {
			f.schema.Relations = append(f.schema.Relations, heteroepoch.Relation{Src: f.schema.NodeTypes[s].Name, Name: "to", Dst: f.schema.NodeTypes[d].Name})
			rows := max(counts[s], counts[d])
			c := &host.CSR{Indptr: make([]uint64, 1, rows+1)}
			for v := d; v < n; v += k {
				nb, _ := g.Neighbors(v)
				for _, u := range nb {
					if u%k == s {
						c.Indices = append(c.Indices, u/k)
					}
				}
				c.Indptr = append(c.Indptr, uint64(len(c.Indices)))
			}
			for uint32(len(c.Indptr)) < rows+1 {
				c.Indptr = append(c.Indptr, uint64(len(c.Indices)))
			}
			f.csrs = append(f.csrs, c)
		}
	}
	return f
}

// BenchmarkEpochHeteroVsHomo compares a heterogeneous epoch with the
// homogeneous epoch of the same graph and about the same sampled edges
// (issue 27's target: at most 1.3× the time per sampled edge). The
// homogeneous graph (200 000 nodes, average degree 10, 1 MiB chunks) is
// split by node id modulo k into k types and k² relations (byResidue); the
// homogeneous epoch samples [15, 10, 5] for 20 000 seeds, the typed ones
// [8, 5, 3] in each of 4 relations and [4, 3, 2] in each of 16 (a node has
// k in-relations, so about the same slots per node) for the same seeds.
// All stream through one emulated device with a chunk cache holding the
// whole graph; each reports ns per sampled edge (ns/edge, wall), the
// process's CPU time per sampled edge (cpu-ns/edge, steadier on a shared
// machine), and edges per epoch.
func BenchmarkEpochHeteroVsHomo(b *testing.B) {
	ip, ix := testgraph.RandomCSR(200000, 10, 1)
	g := &host.CSR{Indptr: ip, Indices: ix}
	seeds := testgraph.RandomSeeds(200000, 20000, 1)
	homoDir := filepath.Join(b.TempDir(), "homo")
	writeCSR(b, homoDir, g, 1<<20)
	opts := host.Options{Devices: 1, ChunkCache: 64 << 20}
	b.Run("homo", func(b *testing.B) {
		s, err := host.Open(homoDir, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var edges int64
		cpu0 := processCPU()
		for i := 0; b.Loop(); i++ {
			r, err := s.SampleEpoch(context.Background(), seeds, []int{15, 10, 5}, epoch.Key{Seed: 1, Epoch: uint32(i)})
			if err != nil {
				b.Fatal(err)
			}
			edges += r.NumSampledEdges()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(edges), "ns/edge")
		b.ReportMetric(float64(processCPU()-cpu0)/float64(edges), "cpu-ns/edge")
		b.ReportMetric(float64(edges)/float64(b.N), "edges/epoch")
	})
	for _, v := range []struct {
		types uint32
		fan   []int
	}{{2, []int{8, 5, 3}}, {4, []int{4, 3, 2}}} {
		f := byResidue(g, v.types)
		dirs := f.write(b, 1<<20)
		typed := make([][]uint32, v.types)
		for _, s := range seeds {
			typed[s%v.types] = append(typed[s%v.types], s/v.types)
		}
		var hseeds []heteroepoch.Seeds
		for t := range typed {
			hseeds = append(hseeds, heteroepoch.Seeds{Type: f.schema.NodeTypes[t].Name, Nodes: typed[t]})
		}
		fan := make([][]int, len(f.schema.Relations))
		for r := range fan {
			fan[r] = v.fan
		}
		b.Run(fmt.Sprintf("hetero-%drel", len(fan)), func(b *testing.B) {
			s, err := Open(f.schema, dirs, Options{Host: opts})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var edges int64
			cpu0 := processCPU()
			for i := 0; b.Loop(); i++ {
				r, err := s.SampleEpoch(context.Background(), hseeds, fan, epoch.Key{Seed: 1, Epoch: uint32(i)})
				if err != nil {
					b.Fatal(err)
				}
				edges += r.SampledEdges()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(edges), "ns/edge")
			b.ReportMetric(float64(processCPU()-cpu0)/float64(edges), "cpu-ns/edge")
			b.ReportMetric(float64(edges)/float64(b.N), "edges/epoch")
		})
	}
}

// TestByResidueKeepsEdges: the split behind the benchmark puts every
// edge of the homogeneous graph in exactly one relation, with its
// endpoints' local ids, for k = 2 and 3.
func TestByResidueKeepsEdges(t *testing.T) {
	ip, ix := testgraph.RandomCSR(301, 6, 2)
	g := &host.CSR{Indptr: ip, Indices: ix}
	for _, k := range []uint32{2, 3} {
		f := byResidue(g, k)
		var total int
		for r, c := range f.csrs {
			s, d := uint32(r)/k, uint32(r)%k
			total += len(c.Indices)
			if c.NumNodes() != max(f.schema.NodeTypes[s].Count, f.schema.NodeTypes[d].Count) {
				t.Fatalf("k %d relation %d: %d rows", k, r, c.NumNodes())
			}
			for lv := uint32(0); lv < f.schema.NodeTypes[d].Count; lv++ {
				nb, _ := c.Neighbors(lv)
				full, _ := g.Neighbors(k*lv + d)
				var want []uint32
				for _, u := range full {
					if u%k == s {
						want = append(want, u/k)
					}
				}
				if !slices.Equal(nb, want) {
					t.Fatalf("k %d relation %d row %d: %v, want %v", k, r, lv, nb, want)
				}
			}
		}
		if total != len(g.Indices) {
			t.Fatalf("k %d: %d edges in the relations, %d in the graph", k, total, len(g.Indices))
		}
	}
}
