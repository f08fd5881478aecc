package host

import "github.com/streamsampler/streamsampler/chunkfmt"

// graphAdjacency adapts a chunkfmt.Graph to Adjacency.
type graphAdjacency struct{ g *chunkfmt.Graph }

func (a graphAdjacency) NumNodes() uint32 { return a.g.Manifest.NumNodes }
func (a graphAdjacency) Neighbors(node uint32) ([]uint32, error) {
	return a.g.Reader.Neighbors(node)
}

// GraphAdjacency lets Reference sample straight from an opened (memory-
// mapped) graph directory.
func GraphAdjacency(g *chunkfmt.Graph) Adjacency { return graphAdjacency{g} }
