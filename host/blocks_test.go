package host

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/streamsampler/streamsampler/epoch"
)

// TestSampleBlocksEqualsEpochAssembly is SampleBlocks' contract: sampling
// one minibatch from scratch gives exactly the blocks that the epoch
// assembly builds from Reference's epoch, with and without replacement,
// for every minibatch of the epoch (shuffled, so seeds are unsorted).
func TestSampleBlocksEqualsEpochAssembly(t *testing.T) {
	g := randomCSR(3000, 6, 31)
	train := make([]uint32, 0, 300)
	for v := uint32(0); v < 3000; v += 10 {
		train = append(train, v)
	}
	for _, tc := range []struct {
		name    string
		fanouts []int
		key     epoch.Key
	}{
		{"three-hops", []int{7, 4, 3}, epoch.Key{Seed: 9, Epoch: 2}},
		{"replace", []int{7, 4, 3}, epoch.Key{Seed: 9, Epoch: 2, Replace: true}},
		{"one-hop", []int{25}, epoch.Key{Seed: 1, Epoch: 0}},
		{"fanout-one", []int{1, 1, 1, 1}, epoch.Key{Seed: 5, Epoch: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Reference(g, train, tc.fanouts, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			edges := 0
			for _, b := range epoch.Batches(train, 64, 1, tc.key.Epoch) {
				want, err := res.Assemble(b, epoch.DGL)
				if err != nil {
					t.Fatal(err)
				}
				got, err := SampleBlocks(g, b, tc.fanouts, tc.key)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					t.Fatalf("blocks differ for the batch starting with %d:\ngot  %s\nwant %s", b[0], got.AppendJSON(nil), want.AppendJSON(nil))
				}
				edges += got.NumEdges()
			}
			if edges == 0 {
				t.Fatal("no edges sampled: the comparison proves nothing")
			}
		})
	}
}

// normalize makes nil and empty slices compare equal (an isolated node's
// hop has no edges; one side may leave the slice nil).
func normalize(b *epoch.Blocks) *epoch.Blocks {
	c := *b
	c.Hops = slices.Clone(b.Hops)
	nz := func(s []int32) []int32 {
		if s == nil {
			return []int32{}
		}
		return s
	}
	for i := range c.Hops {
		c.Hops[i].EdgeSrc, c.Hops[i].EdgeDst = nz(c.Hops[i].EdgeSrc), nz(c.Hops[i].EdgeDst)
	}
	return &c
}

// TestSampleBlocksStructure checks the block invariants directly: each
// hop's Src starts with its Dst, the next hop's Dst is this Src, local ids
// are in range and every edge is an edge of the graph.
func TestSampleBlocksStructure(t *testing.T) {
	g := randomCSR(2000, 8, 3)
	seeds := []uint32{1999, 0, 17, 1000, 512}
	b, err := SampleBlocks(g, seeds, []int{5, 3}, epoch.Key{Seed: 4, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Seeds, seeds) || b.Epoch != 1 || len(b.Hops) != 2 {
		t.Fatalf("header: epoch %d seeds %v hops %d", b.Epoch, b.Seeds, len(b.Hops))
	}
	for h, hop := range b.Hops {
		if !slices.Equal(hop.Src[:len(hop.Dst)], hop.Dst) {
			t.Fatalf("hop %d: src does not start with dst", h+1)
		}
		if h+1 < len(b.Hops) && !slices.Equal(b.Hops[h+1].Dst, hop.Src) {
			t.Fatalf("hop %d: next dst is not this src", h+1)
		}
		for e := range hop.EdgeSrc {
			s, d := hop.Src[hop.EdgeSrc[e]], hop.Dst[hop.EdgeDst[e]]
			nb, _ := g.Neighbors(d)
			if _, ok := slices.BinarySearch(nb, s); !ok {
				t.Fatalf("hop %d edge %d: %d -> %d is not an edge", h+1, e, s, d)
			}
		}
	}
}

func TestSampleBlocksRejects(t *testing.T) {
	g := randomCSR(100, 4, 1)
	key := epoch.Key{Seed: 1}
	for _, tc := range []struct {
		name    string
		seeds   []uint32
		fanouts []int
		want    error
	}{
		{"duplicate-seed", []uint32{3, 4, 3}, []int{2}, epoch.ErrDuplicateSeed},
		{"seed-out-of-range", []uint32{100}, []int{2}, ErrInvalid},
		{"no-fanouts", []uint32{1}, nil, ErrInvalid},
		{"zero-fanout", []uint32{1}, []int{3, 0}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := SampleBlocks(g, tc.seeds, tc.fanouts, key); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// BenchmarkSampleBlocks times the per-minibatch sampler against the
// epoch assembly of the same minibatch (an Assembler with a dense index,
// as internal/hostbench and the CLI use it), alternating the two in each iteration
// so that both see the same machine; it reports each one's ns per batch
// and their ratio, assembly-speedup.
func BenchmarkSampleBlocks(b *testing.B) {
	g := randomCSR(200000, 10, 5)
	train := make([]uint32, 0, 20000)
	for v := uint32(0); v < 200000; v += 10 {
		train = append(train, v)
	}
	fan := []int{15, 10, 5}
	key := epoch.Key{Seed: 1}
	res, err := Reference(g, train, fan, key)
	if err != nil {
		b.Fatal(err)
	}
	ix, err := res.Index(0)
	if err != nil {
		b.Fatal(err)
	}
	as := epoch.NewAssembler(res, ix)
	batches := epoch.Batches(train, 1024, 1, 0)
	var base, asm time.Duration
	n := 0
	for b.Loop() {
		batch := batches[n%len(batches)]
		t0 := time.Now()
		if _, err := SampleBlocks(g, batch, fan, key); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := as.Assemble(batch, epoch.DGL); err != nil {
			b.Fatal(err)
		}
		base, asm = base+t1.Sub(t0), asm+time.Since(t1)
		n++
	}
	b.ReportMetric(float64(base.Nanoseconds())/float64(n), "per-minibatch-ns/batch")
	b.ReportMetric(float64(asm.Nanoseconds())/float64(n), "assembly-ns/batch")
	b.ReportMetric(float64(base)/float64(asm), "assembly-speedup")
}
