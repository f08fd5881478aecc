package main

import (
	"fmt"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/rng"
)

// loadCSR reads a whole graph directory into memory, for the in-memory
// baselines of the benchmark.
func loadCSR(dir string) (*host.CSR, error) {
	g, err := chunkfmt.Open(dir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	n := g.Manifest.NumNodes
	c := &host.CSR{Indptr: make([]uint64, n+1), Indices: make([]uint32, 0, g.Manifest.NumEdges)}
	for v := uint32(0); v < n; v++ {
		nb, err := g.Reader.Neighbors(v)
		if err != nil {
			return nil, err
		}
		c.Indices = append(c.Indices, nb...)
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c, nil
}

// minibatchSampler is the peer the epoch assembly is measured against: a
// DGL-style sampler that builds each minibatch's blocks from scratch out
// of an in-memory CSR (sample every dst node's neighbors, then relabel to
// local ids with a hash map), the way a per-minibatch NeighborSampler
// works. It draws with the same rng contract, so its blocks are identical
// to the epoch assembly's, which the benchmark checks.
type minibatchSampler struct {
	g       *host.CSR
	fanouts []int
	key     epoch.Key
	row     []int32
}

func (m *minibatchSampler) sample(seeds []uint32) (*epoch.Blocks, error) {
	b := &epoch.Blocks{Epoch: m.key.Epoch, Seeds: append([]uint32(nil), seeds...), Hops: make([]epoch.Hop, len(m.fanouts))}
	dst := b.Seeds
	for h, k := range m.fanouts {
		if cap(m.row) < k {
			m.row = make([]int32, k)
		}
		row := m.row[:k]
		local := make(map[uint32]int32, len(dst)*(k+1))
		src := make([]uint32, 0, len(dst)*(k+1))
		for _, v := range dst {
			if _, ok := local[v]; ok {
				return nil, fmt.Errorf("duplicate node %d in hop %d", v, h+1)
			}
			local[v] = int32(len(src))
			src = append(src, v)
		}
		var es, ed []int32
		key := m.key.Layer(h)
		for i, v := range dst {
			nb, err := m.g.Neighbors(v)
			if err != nil {
				return nil, err
			}
			rng.Sample(row, nb, v, key, m.key.Replace)
			for _, s := range row {
				if s < 0 {
					continue
				}
				id, ok := local[uint32(s)]
				if !ok {
					id = int32(len(src))
					local[uint32(s)] = id
					src = append(src, uint32(s))
				}
				es = append(es, id)
				ed = append(ed, int32(i))
			}
		}
		b.Hops[h] = epoch.Hop{Dst: dst, Src: src, EdgeSrc: es, EdgeDst: ed}
		dst = src
	}
	return b, nil
}
