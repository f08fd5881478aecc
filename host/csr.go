package host

import (
	"fmt"

	"github.com/streamsampler/streamsampler/chunkfmt"
)

// LoadCSR reads a whole graph directory into an in-memory CSR, for the
// in-memory samplers (Reference, SampleBlocks) when the graph fits in
// memory. Every chunk's CRC-32C and every neighbor id is checked
// (chunkfmt.Reader.CSR). The directory is closed again before LoadCSR
// returns.
func LoadCSR(dir string) (*CSR, error) {
	g, err := chunkfmt.Open(dir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	indptr, indices, err := g.CSR()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	return &CSR{Indptr: indptr, Indices: indices}, nil
}
