package host

import (
	"fmt"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// LoadCSR reads a whole graph directory into an in-memory CSR, for the
// in-memory samplers (Reference, SampleBlocks) when the graph fits in
// memory. The directory is closed again before LoadCSR returns.
func LoadCSR(dir string) (*CSR, error) {
	g, err := chunkfmt.Open(dir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	n := g.Manifest.NumNodes
	c := &CSR{Indptr: make([]uint64, n+1), Indices: make([]uint32, 0, g.Manifest.NumEdges)}
	for v := uint32(0); v < n; v++ {
		nb, err := g.Reader.Neighbors(v)
		if err != nil {
			return nil, fmt.Errorf("load %s: node %d: %w", dir, v, err)
		}
		c.Indices = append(c.Indices, nb...)
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c, nil
}
