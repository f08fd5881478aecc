package heterosample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/streamsampler/streamsampler/heteroepoch"

	"github.com/streamsampler/streamsampler/chunkfmt"
	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/host"
	"github.com/streamsampler/streamsampler/rng"
)

// ErrNotYet is wrapped by the error for a backend Open cannot open by
// itself: the GPU backend, whose Backends (gpu.Backend, a LayerSampler
// through the library's ssg_sample_keyed) a caller opens per relation
// with Options.OpenRelation, since this package does not import gpu.
var ErrNotYet = errors.New("heterosample: not yet supported")

// ErrBadSample is wrapped by the error for a sample that is not a node of
// the relation's src type (at or beyond its count): only a relation
// store whose rows break the typed bound (FORMAT.md: every neighbor id is
// below count(src)) gives one.
var ErrBadSample = errors.New("heterosample: sample is not a node of the relation's source type")

// LayerSampler samples one layer of one relation: fanout neighbors (or
// every neighbor, epoch.AllNeighbors) of each node of a sorted unique
// frontier, under an explicit layer key. host.Sampler (through
// SampleLayerKeyed) and the in-memory reference are the two there are.
type LayerSampler interface {
	SampleLayer(ctx context.Context, layer int, frontier []uint32, fanout int, layerKey uint64, replace bool) (epoch.Layer, error)
	// EdgeIDs reports whether the layers carry edge ids.
	EdgeIDs() bool
}

// Sample samples a heterogeneous epoch (DESIGN §4, "Heterogeneous
// epochs") with rels[r] sampling relation r: frontier_0 of each type is
// its sorted unique seeds; at layer l every relation r with a fanout
// other than 0 samples frontier_l[dst(r)] under rng.RelationKey(seed,
// epoch, l, r); frontier_{l+1}[s] is frontier_l[s] with the valid samples
// of every relation whose src type is s. Relations are sampled one after
// another in the schema's order, so they take the devices in turn.
func Sample(ctx context.Context, schema *heteroepoch.Schema, rels []LayerSampler, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) (*heteroepoch.Result, error) {
	L, byType, err := schema.Request(len(rels), "relation samplers", seeds, fanouts)
	if err != nil {
		return nil, err
	}
	src, dst := schema.RelTypes()
	front := make([][]uint32, len(schema.NodeTypes))
	for t, s := range byType {
		front[t] = slices.Compact(slices.Sorted(slices.Values(s)))
	}
	res := &heteroepoch.Result{Key: key, Schema: cloneSchema(schema), Fanouts: cloneFanouts(fanouts), Frontiers: [][][]uint32{front}}
	// parts[t] collects the layer's sample arrays of the relations whose
	// src type is t: frontier_{l+1}[t] is their union with frontier_l[t].
	parts := make([][][]int32, len(front))
	for l := 0; l < L; l++ {
		layer := make([]epoch.Layer, len(rels))
		for r, rs := range rels {
			k, fr := fanouts[r][l], front[dst[r]]
			if k == 0 {
				layer[r] = epoch.Layer{Frontier: fr}
				continue
			}
			rel := schema.Relations[r]
			var ly epoch.Layer
			if len(fr) == 0 {
				ly = emptyLayer(k, rs.EdgeIDs())
			} else {
				lkey := rng.RelationKey(key.Seed, key.Epoch, l, uint32(r))
				ly, err = rs.SampleLayer(ctx, l, fr, k, lkey, key.Replace)
				if err != nil {
					return nil, fmt.Errorf("heterosample: epoch %d, layer %d (hop %d), relation %s: %w", key.Epoch, l, l+1, rel, err)
				}
			}
			if err := checkTyped(&ly, schema.NodeTypes[src[r]].Count); err != nil {
				return nil, fmt.Errorf("heterosample: epoch %d, layer %d (hop %d), relation %s: %w", key.Epoch, l, l+1, rel, err)
			}
			layer[r] = ly
			parts[src[r]] = append(parts[src[r]], ly.Samples)
		}
		next := make([][]uint32, len(front))
		for t := range front {
			next[t] = epoch.UnionFrontier(front[t], parts[t], schema.NodeTypes[t].Count)
			parts[t] = parts[t][:0]
		}
		res.Layers = append(res.Layers, layer)
		front = next
		res.Frontiers = append(res.Frontiers, front)
	}
	return res, nil
}

// emptyLayer is a layer over an empty frontier, shaped as the reference
// shapes one (empty, not nil, samples; a full layer's single offset).
func emptyLayer(k int, edgeIDs bool) epoch.Layer {
	ly := epoch.Layer{Frontier: []uint32{}, Fanout: k, Samples: []int32{}}
	if edgeIDs {
		ly.EdgeIDs = []int64{}
	}
	if k == epoch.AllNeighbors {
		ly.Offsets = []int64{0}
	}
	return ly
}

// checkTyped checks every sample of a layer against the src type's count,
// a bound the relation's graph (num_nodes = max of both counts) does not
// state; the error names the frontier node, the slot and the value. The
// scan is flat over the samples (empty slots, -1, skipped); rows are
// looked up only to name a bad sample.
func checkTyped(ly *epoch.Layer, count uint32) error {
	// The largest sample first, branch-free (empty slots are -1, below
	// every id); the rows only when it is out of range.
	var mx int32 = -1
	for _, s := range ly.Samples {
		mx = max(mx, s)
	}
	if mx < 0 || uint32(mx) < count {
		return nil
	}
	for j, s := range ly.Samples {
		if s >= 0 && uint32(s) >= count {
			for i := range ly.Frontier {
				if lo, hi := ly.Span(i); j >= lo && j < hi {
					return fmt.Errorf("%w: node %d, slot %d: %d, but the source type has %d nodes", ErrBadSample, ly.Frontier[i], j-lo, s, count)
				}
			}
			return fmt.Errorf("%w: sample %d: %d, but the source type has %d nodes", ErrBadSample, j, s, count)
		}
	}
	return nil
}

func cloneSchema(s *heteroepoch.Schema) heteroepoch.Schema {
	return heteroepoch.Schema{NodeTypes: slices.Clone(s.NodeTypes), Relations: slices.Clone(s.Relations)}
}

func cloneFanouts(f [][]int) [][]int {
	out := make([][]int, len(f))
	for i, fs := range f {
		out[i] = slices.Clone(fs)
	}
	return out
}

// Options configures Open.
type Options struct {
	// Backend is host.BackendEmu, host.BackendXRT, or "gpu", which needs
	// OpenRelation (ErrNotYet without); "" takes Host.Backend ("" there
	// means emu).
	Backend string
	// OpenRelation, when set, opens relation r's sampler over its graph
	// directory instead of a host.Sampler: how a caller brings an engine
	// this package does not import (cmd/streamsampler opens a gpu.Backend
	// per relation for --backend gpu). The Sampler closes what it returns
	// that is an io.Closer; such relations have no host statistics.
	OpenRelation func(r int, dir string) (LayerSampler, error)
	// Host configures every relation's host.Sampler (with Backend as its
	// Backend). Host.ChunkCache is the budget of all relations together,
	// shared out in proportion to each relation's graph size (each
	// relation keeps its own cache, at least host's floor of two chunks
	// per device).
	Host host.Options
}

// Sampler streams a heterogeneous graph's relations through the devices:
// one host.Sampler per relation, each over its own graph directory, with
// its own chunk cache (a share of the budget).
type Sampler struct {
	schema heteroepoch.Schema
	rels   []*host.Sampler
	// layers are the relations' samplers from Options.OpenRelation (nil
	// when they are rels).
	layers []LayerSampler
	edges  bool
}

// BackendGPU is the backend name of the CUDA engine, which Open opens
// only through Options.OpenRelation (ErrNotYet without).
const BackendGPU = "gpu"

// Open opens relation r's graph directory dirs[r] (relations in the
// schema's order) with a host.Sampler each. Each relation's graph must have
// max(count(src), count(dst)) nodes, as the heterogeneous directory
// writes them (rows beyond count(dst) empty).
func Open(schema *heteroepoch.Schema, dirs []string, opts Options) (_ *Sampler, err error) {
	if err := schema.Validate(); err != nil {
		return nil, err
	}
	if opts.Backend == "" {
		opts.Backend = opts.Host.Backend
	}
	if opts.Backend == BackendGPU && opts.OpenRelation == nil {
		return nil, fmt.Errorf("heterosample: %w: Open does not open the gpu backend itself; pass Options.OpenRelation (a gpu.Backend per relation), or use emu or xrt", ErrNotYet)
	}
	if len(dirs) != len(schema.Relations) {
		return nil, fmt.Errorf("%w: %d graph directories for %d relations", heteroepoch.ErrInvalid, len(dirs), len(schema.Relations))
	}
	mans := make([]*chunkfmt.Manifest, len(dirs))
	var total int64
	for r, dir := range dirs {
		m, err := chunkfmt.ReadManifest(dir)
		if err != nil {
			return nil, fmt.Errorf("heterosample: relation %s: %w", schema.Relations[r], err)
		}
		rel := schema.Relations[r]
		want := max(schema.NodeTypes[schema.TypeIndex(rel.Src)].Count, schema.NodeTypes[schema.TypeIndex(rel.Dst)].Count)
		if m.NumNodes != want {
			return nil, fmt.Errorf("%w: relation %s (%s): graph has %d nodes, want max(count(%s), count(%s)) = %d", heteroepoch.ErrInvalid, rel, dir, m.NumNodes, rel.Src, rel.Dst, want)
		}
		mans[r] = m
		total += host.GraphReadBytes(m)
	}
	s := &Sampler{schema: cloneSchema(schema), edges: opts.Host.EdgeIDs}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if opts.OpenRelation != nil {
		for r, dir := range dirs {
			ls, err := opts.OpenRelation(r, dir)
			if err != nil {
				return nil, fmt.Errorf("heterosample: relation %s: %w", schema.Relations[r], err)
			}
			s.layers = append(s.layers, ls)
			s.edges = s.edges || ls.EdgeIDs()
		}
		return s, nil
	}
	for r, dir := range dirs {
		o := opts.Host
		o.Backend = opts.Backend
		if total > 0 && o.ChunkCache > 0 {
			o.ChunkCache = int64(float64(opts.Host.ChunkCache) * float64(host.GraphReadBytes(mans[r])) / float64(total))
		}
		hs, err := host.Open(dir, o)
		if err != nil {
			return nil, fmt.Errorf("heterosample: relation %s: %w", schema.Relations[r], err)
		}
		s.rels = append(s.rels, hs)
	}
	return s, nil
}

// SampleEpoch samples the epoch of key from seeds with per-relation
// fanouts (Sample).
func (s *Sampler) SampleEpoch(ctx context.Context, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) (*heteroepoch.Result, error) {
	res, _, err := s.SampleEpochStats(ctx, seeds, fanouts, key)
	return res, err
}

// Stats describes one heterogeneous epoch: Layers[l][r] is relation r's
// layer l as its host.Sampler streamed it (nil where the relation was not
// sampled: fanout 0 or an empty frontier).
type Stats struct {
	Layers [][]*host.LayerStats
	Wall   time.Duration
}

// BytesRead returns the bytes read from every relation's edges.chunks.
func (st *Stats) BytesRead() int64 {
	var n int64
	for _, layer := range st.Layers {
		for _, ls := range layer {
			if ls != nil {
				n += ls.BytesRead
			}
		}
	}
	return n
}

// SampleEpochStats is SampleEpoch returning the epoch's statistics too.
func (s *Sampler) SampleEpochStats(ctx context.Context, seeds []heteroepoch.Seeds, fanouts [][]int, key epoch.Key) (*heteroepoch.Result, *Stats, error) {
	start := time.Now()
	st := &Stats{}
	if L, err := s.schema.NumLayers(fanouts); err == nil {
		st.Layers = make([][]*host.LayerStats, L)
		for l := range st.Layers {
			st.Layers[l] = make([]*host.LayerStats, len(s.rels))
		}
	}
	rels := s.layers
	if rels == nil {
		rels = make([]LayerSampler, len(s.rels))
		for i, hs := range s.rels {
			rels[i] = &hostLayers{s: hs, edges: s.edges, rel: i, st: st}
		}
	}
	res, err := Sample(ctx, &s.schema, rels, seeds, fanouts, key)
	if err != nil {
		return nil, nil, err
	}
	st.Wall = time.Since(start)
	return res, st, nil
}

// Relation returns relation r's host.Sampler (its statistics, its
// manifest), nil when Options.OpenRelation opened the relations.
func (s *Sampler) Relation(r int) *host.Sampler {
	if s.rels == nil {
		return nil
	}
	return s.rels[r]
}

// Close closes every relation's sampler.
func (s *Sampler) Close() error {
	var errs []error
	for _, hs := range s.rels {
		errs = append(errs, hs.Close())
	}
	for _, ls := range s.layers {
		if c, ok := ls.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	s.rels, s.layers = nil, nil
	return errors.Join(errs...)
}

// hostLayers samples relation rel's layers through its host.Sampler,
// recording each layer's statistics in st.
type hostLayers struct {
	s     *host.Sampler
	edges bool
	rel   int
	st    *Stats
}

func (h *hostLayers) SampleLayer(ctx context.Context, layer int, frontier []uint32, fanout int, layerKey uint64, replace bool) (epoch.Layer, error) {
	ly, ls, err := h.s.SampleLayerKeyed(ctx, layer, frontier, fanout, layerKey, replace)
	if err != nil {
		return epoch.Layer{}, err
	}
	if layer < len(h.st.Layers) {
		h.st.Layers[layer][h.rel] = ls
	}
	return ly, nil
}

func (h *hostLayers) EdgeIDs() bool { return h.edges }

// MemoryLayers samples a relation's layers in memory with
// host.ReferenceLayerKeyed (the oracle; also what Reference uses).
type MemoryLayers struct {
	Graph host.Adjacency
	// Edges asks for edge ids (Graph must be a host.EdgeAdjacency, as
	// *host.CSR is).
	Edges bool
}

// SampleLayer implements LayerSampler.
func (m MemoryLayers) SampleLayer(ctx context.Context, layer int, frontier []uint32, fanout int, layerKey uint64, replace bool) (epoch.Layer, error) {
	if err := ctx.Err(); err != nil {
		return epoch.Layer{}, err
	}
	return host.ReferenceLayerKeyed(m.Graph, layer, frontier, fanout, layerKey, replace, m.Edges)
}

// EdgeIDs implements LayerSampler.
func (m MemoryLayers) EdgeIDs() bool { return m.Edges }
