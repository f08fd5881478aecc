package heterosample

import (
	"fmt"
	"slices"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/rng"
)

// Reference samples a heterogeneous epoch in memory, as plainly as
// possible, from each relation's in-edge graph (graphs[r], rows the dst
// type's nodes, neighbors src-type ids): the oracle the streamed epochs
// are tested against. Its frontiers are computed with sets, independently
// of Sample's loop (epoch.NextFrontier); each relation's layer is
// host.ReferenceLayerKeyed under rng.RelationKey. With edgeIDs every
// graph must be a host.EdgeAdjacency.
func Reference(schema *heteroepoch.Schema, graphs []host.Adjacency, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key, edgeIDs bool) (*heteroepoch.Result, error) {
	L, byType, err := schema.Request(len(graphs), "graphs", seeds, fanouts)
	if err != nil {
		return nil, err
	}
	T := len(schema.NodeTypes)
	sets := make([]map[uint32]bool, T)
	for t := range sets {
		sets[t] = map[uint32]bool{}
		for _, v := range byType[t] {
			sets[t][v] = true
		}
	}
	res := &heteroepoch.Result{Key: key, Schema: cloneSchema(schema), Fanouts: cloneFanouts(fanouts), Frontiers: [][][]uint32{sortedSets(sets)}}
	for l := 0; l < L; l++ {
		front := res.Frontiers[l]
		layer := make([]epoch.Layer, len(schema.Relations))
		for r, rel := range schema.Relations {
			s, d := schema.TypeIndex(rel.Src), schema.TypeIndex(rel.Dst)
			k := fanouts[r][l]
			if k == 0 {
				layer[r] = epoch.Layer{Frontier: front[d]}
				continue
			}
			ly, err := host.ReferenceLayerKeyed(graphs[r], l, front[d], k, rng.RelationKey(key.Seed, key.Epoch, l, uint32(r)), key.Replace, edgeIDs)
			if err != nil {
				return nil, fmt.Errorf("reference: layer %d relation %s: %w", l, rel, err)
			}
			for _, x := range ly.Samples {
				if x >= 0 {
					if uint32(x) >= schema.NodeTypes[s].Count {
						return nil, fmt.Errorf("reference: layer %d relation %s: %w: %d", l, rel, ErrBadSample, x)
					}
					sets[s][uint32(x)] = true
				}
			}
			layer[r] = ly
		}
		res.Layers = append(res.Layers, layer)
		res.Frontiers = append(res.Frontiers, sortedSets(sets))
	}
	return res, nil
}

// sortedSets returns each set's members, sorted.
func sortedSets(sets []map[uint32]bool) [][]uint32 {
	out := make([][]uint32, len(sets))
	for t, set := range sets {
		out[t] = make([]uint32, 0, len(set))
		for v := range set {
			out[t] = append(out[t], v)
		}
		slices.Sort(out[t])
	}
	return out
}
